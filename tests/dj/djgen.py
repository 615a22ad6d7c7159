#!/usr/bin/env python3
"""Generator and independent decoders of glibc dj/malloc files (tests only).

Written from the semantics of dj's malloc/mtrace.h, trace2wl.c and
trace_run.c (docs/DJ_COMPAT.md), independently of alloctrace's C code, so
that the tests check alloctrace's readers and writers against dj's formats
and not against themselves.

  djgen.py trace OUT [--seed N]      a dj trace (64-byte records)
  djgen.py workload OUT [--seed N]   a dj workload as dj's trace2wl makes it
  djgen.py decode-wl FILE            counts, syncs and races of a dj workload (JSON)
  djgen.py decode-trace FILE         counts and threads of a dj trace (JSON)
  djgen.py dj-trace2wl TRACE OUT     what dj's trace2wl makes of TRACE, decoded (JSON)
"""
import json
import random
import struct
import sys

# trace record types (mtrace.h)
T_MALLOC, T_CALLOC, T_FREE, T_REALLOC, T_MEMALIGN, T_VALLOC, T_PVALLOC, T_PMA = range(1, 9)
T_MAGIC = 255
M_F_REALLOC = 1 << 14  # path bit in the type word (after the 8 type bits)
# workload ops
(C_NOP, C_DONE, C_MALLOC, C_CALLOC, C_REALLOC, C_FREE, C_SYNC_W, C_SYNC_R, C_ALLOC_PTRS,
 C_ALLOC_SYNCS, C_NTHREADS, C_START_THREAD, C_MEMALIGN, C_VALLOC, C_PVALLOC, C_PMA) = range(16)

TYPE_NAMES = {T_MALLOC: "malloc", T_CALLOC: "calloc", T_FREE: "free", T_REALLOC: "realloc",
              T_MEMALIGN: "memalign", T_VALLOC: "valloc", T_PVALLOC: "pvalloc",
              T_PMA: "posix_memalign"}


def rec(tid, typ, ptr1=0, ptr2=0, size=0, size2=0, size3=0, path=0):
    return struct.pack("<iIQQQQQQQ", tid, typ | path, ptr1, ptr2, size, size2, size3, 0, 0)


class Heap:
    """A fake allocator: freed addresses are reused first (LIFO), so
    address reuse across threads is common."""

    def __init__(self):
        self.next = 0x10000
        self.freed = []

    def get(self):
        if self.freed:
            return self.freed.pop()
        self.next += 0x40
        return self.next

    def put(self, a):
        self.freed.append(a)


def gen_trace(seed, n=3000):
    """A multi-threaded program's calls in true order, recorded in *entry*
    order as dj's tracer does: some allocations entered before the free of
    the address they got (inversions), moving reallocs, every call type,
    an m_f_realloc pair, tids that differ only in the low 3 bits.
    Returns (bytes, expected)."""
    rnd = random.Random(seed)
    tids = [4000, 4001, 4002, 4009, 4017]  # dj's trace2wl merges 4000/4001/4002
    heap = Heap()
    live = {}  # addr -> (owner tid, size)
    recs = []  # (entry key, bytes)
    counts = {k: 0 for k in TYPE_NAMES.values()}
    cur = peak = 0
    key = 0.0
    inversions = 0

    def add(k, b):
        recs.append((k, len(recs), b))

    for i in range(n):
        tid = tids[0] if i < 20 else rnd.choice(tids)
        key += 1.0
        r = rnd.random()
        if live and r < 0.42:
            # free, often of another thread's block
            a = rnd.choice(list(live))
            cur -= live.pop(a)[1]
            add(key, rec(tid, T_FREE, ptr1=a, size2=64))
            counts["free"] += 1
            heap.put(a)
            # another thread's malloc that entered just before this free
            # and got its address: recorded first (an inversion)
            if rnd.random() < 0.3:
                t2 = rnd.choice([t for t in tids if t != tid])
                b = heap.get()
                assert b == a
                sz = rnd.randint(1, 300)
                live[b] = (t2, sz)
                cur += sz
                peak = max(peak, cur)
                add(key - 0.5, rec(t2, T_MALLOC, ptr2=b, size=sz))
                counts["malloc"] += 1
                inversions += 1
            continue
        if live and r < 0.55:
            a = rnd.choice(list(live))
            old = live.pop(a)[1]
            sz = rnd.randint(1, 4000)
            cur -= old
            if rnd.random() < 0.3:
                b = a  # in place
            else:
                b = heap.get()
                heap.put(a)
            live[b] = (tid, sz)
            cur += sz
            peak = max(peak, cur)
            add(key, rec(tid, T_REALLOC, ptr1=a, ptr2=b, size=sz, size2=old))
            counts["realloc"] += 1
            continue
        sz = rnd.randint(0, 5000)
        b = heap.get()
        kind = rnd.choice([T_MALLOC, T_MALLOC, T_MALLOC, T_CALLOC, T_MEMALIGN, T_PMA, T_VALLOC,
                           T_PVALLOC])
        live[b] = (tid, sz)
        cur += sz
        peak = max(peak, cur)
        if kind == T_MEMALIGN:
            add(key, rec(tid, kind, ptr2=b, size=sz, size2=64))
        elif kind == T_PMA:
            add(key, rec(tid, kind, ptr1=0, ptr2=b, size=sz, size2=128))
        else:
            add(key, rec(tid, kind, ptr2=b, size=sz))
        counts[TYPE_NAMES[kind]] += 1
    # realloc(NULL, n) that glibc turned into malloc: two records, one call
    tid = tids[1]
    b = heap.get()
    key += 1.0
    add(key, rec(tid, T_REALLOC, ptr1=0, ptr2=0, size=77, path=M_F_REALLOC))
    add(key + 0.1, rec(tid, T_MALLOC, ptr2=b, size=77))
    live[b] = (tid, 77)
    cur += 77
    peak = max(peak, cur)
    counts["realloc"] += 1
    recs.sort()
    out = rec(tids[0], T_MAGIC, ptr1=0x1234, size=8) + b"".join(r[2] for r in recs)
    out += bytes(64 * 3)  # dj's trace ends in zeroed records
    counts["total"] = sum(counts.values())
    return out, {"calls": counts, "threads": len(tids), "ideal_peak": peak, "inversions": inversions}


def put_vi(v):
    g = [v & 0x7f]
    v >>= 7
    while v:
        g.append((v & 0x7f) | 0x80)
        v >>= 7
    return bytes(reversed(g))


def dj_header(n_ptrs, n_syncs, streams):
    """trace2wl's header: the offsets depend on its own length, so it is
    built until that is stable."""
    hlen = 0
    while True:
        off = hlen
        h = bytearray([C_ALLOC_PTRS]) + put_vi(n_ptrs) + bytes([C_ALLOC_SYNCS]) + put_vi(n_syncs)
        h += bytes([C_NTHREADS]) + put_vi(len(streams))
        for s in streams:
            h += bytes([C_START_THREAD]) + put_vi(off)
            off += len(s)
        h.append(C_DONE)
        if len(h) == hlen:
            return bytes(h)
        hlen = len(h)


def gen_workload(seed, n=4000, nthreads=4):
    """A workload as dj's trace2wl writes it: a sync from the master thread
    before each thread's first op, a SYNC_W/SYNC_R pair whenever a block
    changes owner, and dj's own races left in: a moving realloc's new block
    and posix_memalign blocks get no owner, so another thread may free them
    without a sync.  Returns (bytes, expected)."""
    rnd = random.Random(seed)
    streams = [bytearray() for _ in range(nthreads)]
    started = [False] * nthreads
    owner = {}  # index -> thread (None: nobody, dj's race)
    live = set()
    next_idx = [1]
    syncs = [0]
    counts = {"malloc": 0, "calloc": 0, "realloc": 0, "free": 0, "memalign": 0}

    def sync(a, b):
        if a == b:
            return
        syncs[0] += 1
        streams[a] += bytes([C_SYNC_W]) + put_vi(syncs[0])
        streams[b] += bytes([C_SYNC_R]) + put_vi(syncs[0])

    def acq(t, i):
        o = owner.get(i)
        if o is not None and o != t:
            sync(o, t)
        owner[i] = t

    for k in range(n):
        t = 0 if k < 10 else rnd.randrange(nthreads)
        if not started[t]:
            sync(0, t)
            started[t] = True
        s = streams[t]
        r = rnd.random()
        if live and r < 0.4:
            i = rnd.choice(sorted(live))
            acq(t, i)
            live.discard(i)
            s += bytes([C_FREE]) + put_vi(i)
            counts["free"] += 1
        elif live and r < 0.5:
            i = rnd.choice(sorted(live))
            if owner.get(i) is not None:
                acq(t, i)
            j = next_idx[0]
            next_idx[0] += 1
            live.discard(i)
            live.add(j)
            owner[j] = None  # dj: a new address has no owner yet
            s += bytes([C_REALLOC]) + put_vi(j) + put_vi(i) + put_vi(rnd.randint(1, 9000))
            counts["realloc"] += 1
        else:
            j = next_idx[0]
            next_idx[0] += 1
            live.add(j)
            kind = rnd.choice(["malloc", "malloc", "calloc", "memalign", "pma"])
            sz = rnd.randint(0, 70000)
            if kind == "pma":
                owner[j] = None  # dj's trace2wl does not acquire these
                s += bytes([C_MEMALIGN]) + put_vi(j) + put_vi(64) + put_vi(sz)
                counts["memalign"] += 1
            else:
                acq(t, j)
                code = {"malloc": C_MALLOC, "calloc": C_CALLOC, "memalign": C_MEMALIGN}[kind]
                s += bytes([code]) + put_vi(j)
                if kind == "memalign":
                    s += put_vi(4096)
                s += put_vi(sz)
                counts[kind] += 1
    for s in streams:
        s.append(C_DONE)
    head = dj_header(next_idx[0], syncs[0], streams)
    counts["total"] = sum(counts.values())
    return head + b"".join(streams), {"calls": counts, "threads": nthreads, "syncs": syncs[0]}


# ---------------------------------------------------------------- decoders
def get_vi(d, pos):
    v = 0
    for _ in range(10):
        c = d[pos]
        pos += 1
        v |= c & 0x7f
        if not c & 0x80:
            return v, pos
        v <<= 7
    raise ValueError("varint too long at %d" % pos)


def decode_wl(d):
    """Parse a dj workload with trace_run's rules and run it in an order
    that honours its syncs, checking with vector clocks that every use of
    a pointer index by another thread is ordered after its previous use
    (else dj's trace_run races).  Returns counts, syncs and races."""
    pos = 0
    hdr = {}
    starts = []
    while True:
        op = d[pos]
        pos += 1
        if op == C_DONE:
            break
        v, pos = get_vi(d, pos)
        if op == C_START_THREAD:
            starts.append(v)
        else:
            hdr[op] = v
    n_ptrs, n_syncs, nth = hdr[C_ALLOC_PTRS], hdr[C_ALLOC_SYNCS], hdr[C_NTHREADS]
    assert len(starts) == nth
    counts = {"malloc": 0, "calloc": 0, "realloc": 0, "free": 0, "memalign": 0, "valloc": 0,
              "pvalloc": 0}
    clock = [[0] * nth for _ in range(nth)]
    sync_clock = {}
    last = {}  # index -> (thread, that thread's clock at the use)
    races = 0
    max_sync = 0
    pc = list(starts)
    done = [False] * nth
    syncs_w = syncs_r = sync_overflow = 0

    def use(t, i):
        nonlocal races, sync_overflow
        if i == 0:
            return
        assert i < n_ptrs, "index %d past ALLOC_PTRS %d" % (i, n_ptrs)
        if i in last:
            u, c = last[i]
            if u != t and clock[t][u] < c:
                races += 1
        clock[t][t] += 1
        last[i] = (t, clock[t][t])

    while not all(done):
        progress = False
        for t in range(nth):
            while not done[t]:
                p = pc[t]
                op = d[p]
                p += 1
                if op == C_DONE:
                    done[t] = True
                    progress = True
                    break
                args = []
                nargs = {C_MALLOC: 2, C_CALLOC: 2, C_REALLOC: 3, C_FREE: 1, C_SYNC_W: 1, C_SYNC_R: 1,
                         C_MEMALIGN: 3, C_VALLOC: 2, C_PVALLOC: 2, C_NOP: 0}[op]
                for _ in range(nargs):
                    v, p = get_vi(d, p)
                    args.append(v)
                if op == C_SYNC_R:
                    k = args[0]
                    if k not in sync_clock:
                        break  # blocked
                    clock[t] = [max(a, b) for a, b in zip(clock[t], sync_clock[k])]
                    syncs_r += 1
                elif op == C_SYNC_W:
                    k = args[0]
                    # dj's trace_run's arrays hold n_syncs entries; its own
                    # trace2wl writes id n_syncs (one past the end)
                    if not 0 < k < n_syncs:
                        sync_overflow += 1
                    clock[t][t] += 1
                    sync_clock.setdefault(k, list(clock[t]))
                    max_sync = max(max_sync, k)
                    syncs_w += 1
                elif op in (C_MALLOC, C_CALLOC, C_VALLOC, C_PVALLOC):
                    use(t, args[0])
                    counts[{C_MALLOC: "malloc", C_CALLOC: "calloc", C_VALLOC: "valloc",
                            C_PVALLOC: "pvalloc"}[op]] += 1
                elif op == C_MEMALIGN:
                    use(t, args[0])
                    counts["memalign"] += 1
                elif op == C_REALLOC:
                    use(t, args[1])
                    if args[0] != args[1]:
                        use(t, args[0])
                    counts["realloc"] += 1
                elif op == C_FREE:
                    use(t, args[0])
                    counts["free"] += 1
                pc[t] = p
                progress = True
        if not progress:
            raise ValueError("deadlock")
    counts["total"] = sum(counts.values())
    return {"calls": counts, "threads": nth, "n_ptrs": n_ptrs, "n_syncs": n_syncs,
            "syncs_w": syncs_w, "syncs_r": syncs_r, "races": races,
            "syncs_outside_array": sync_overflow}


def decode_trace(d):
    """Counts of a dj trace, and its threads as dj's trace2wl would see
    them (its hash drops the low 3 bits of the thread field)."""
    assert len(d) >= 64 and len(d) % 64 == 0
    tid0, typ = struct.unpack_from("<iI", d, 0)
    p1, p2, size = struct.unpack_from("<QQQ", d, 8)
    assert typ & 0xff == T_MAGIC and p1 == 0x1234 and size == 8, "no magic record"
    counts = {k: 0 for k in TYPE_NAMES.values()}
    tids = set()
    for off in range(64, len(d), 64):
        tid, typ = struct.unpack_from("<iI", d, off)
        t = typ & 0xff
        if t == 0:
            continue
        assert t in TYPE_NAMES, "record type %d" % t
        counts[TYPE_NAMES[t]] += 1
        tids.add(tid)
    counts["total"] = sum(counts.values())
    return {"calls": counts, "threads": len(tids), "dj_threads": len({t >> 3 for t in tids})}


def dj_trace2wl(d):
    """dj's trace2wl (malloc/trace2wl.c), re-typed from its logic: what
    dj's own converter makes of a dj trace, to check that a trace
    alloctrace exports converts without races.  Threads are keyed by
    thread >> 3 (dj's hash), a sync from the master thread starts each
    thread, an allocation of a still-valid address waits for its free (dj's
    inversion fix), a realloc acquires only addresses that had an owner,
    posix_memalign acquires nothing."""
    per_thread = {}
    order = []
    per_addr = {}
    addr_count = [1]
    sync_counter = [0]

    class PA:
        def __init__(self):
            self.owner = None
            self.idx = addr_count[0]
            addr_count[0] += 1
            self.valid = False
            self.inverted = None

    def get_addr(p):
        if not p:
            return None
        if p not in per_addr:
            per_addr[p] = PA()
        return per_addr[p]

    def sync(a, b):
        if a is b:
            return
        sync_counter[0] += 1
        a += bytes([C_SYNC_W]) + put_vi(sync_counter[0])
        b += bytes([C_SYNC_R]) + put_vi(sync_counter[0])

    def acq(t, pa):
        if pa is None:
            return
        if pa.owner is not None and pa.owner is not t:
            sync(pa.owner, t)
        pa.owner = t

    master = [None]
    started = set()

    def one(r):
        tid, word, p1, p2, size, size2 = r
        typ = word & 0xff
        if typ == 0:
            return
        key = tid >> 3
        if key not in per_thread:
            per_thread[key] = bytearray()
            order.append(key)
        t = per_thread[key]
        if master[0] is None:
            master[0] = t
            started.add(id(t))
        elif id(t) not in started:
            sync(master[0], t)
            started.add(id(t))
        pa1, pa2 = get_addr(p1), get_addr(p2)
        if typ == T_MAGIC:
            return
        if typ in (T_MALLOC, T_CALLOC, T_VALLOC, T_PVALLOC):
            if pa2 and pa2.valid:
                pa2.inverted = r
                return
            acq(t, pa2)
            t += bytes([{T_MALLOC: C_MALLOC, T_CALLOC: C_CALLOC, T_VALLOC: C_VALLOC,
                         T_PVALLOC: C_PVALLOC}[typ]])
            t += put_vi(pa2.idx if pa2 else 0) + put_vi(size)
            if pa2:
                pa2.valid = True
        elif typ == T_FREE:
            acq(t, pa1)
            if pa1 is None:
                t += bytes([C_FREE]) + put_vi(0)
            elif pa1.valid:
                t += bytes([C_FREE]) + put_vi(pa1.idx)
                pa1.valid = False
                if pa1.inverted:
                    inv = pa1.inverted
                    pa1.inverted = None
                    one(inv)
        elif typ == T_REALLOC:
            if pa1 and pa1.owner is not None:
                acq(t, pa1)
            if pa2 and pa2.owner is not None:
                acq(t, pa2)
            t += bytes([C_REALLOC]) + put_vi(pa2.idx if pa2 else 0) + put_vi(pa1.idx if pa1 else 0)
            t += put_vi(size)
            if pa1:
                pa1.valid = False
            if pa2:
                pa2.valid = True
        elif typ == T_MEMALIGN:
            acq(t, pa2)
            t += bytes([C_MEMALIGN]) + put_vi(pa2.idx if pa2 else 0) + put_vi(size2) + put_vi(size)
            if pa2:
                pa2.valid = True
        elif typ == T_PMA:
            t += bytes([C_MEMALIGN]) + put_vi(pa2.idx if p1 == 0 else 0) + put_vi(size2) + put_vi(size)
            if p1 == 0:
                pa2.valid = True

    for off in range(0, len(d) - 63, 64):
        tid, word = struct.unpack_from("<iI", d, off)
        p1, p2, size, size2 = struct.unpack_from("<QQQQ", d, off + 8)
        one((tid, word, p1, p2, size, size2))
    streams = [per_thread[k] for k in order]
    for st in streams:
        st.append(C_DONE)
    return dj_header(addr_count[0], sync_counter[0], streams) + b"".join(streams)


def main():
    cmd = sys.argv[1]
    seed = 1
    if "--seed" in sys.argv:
        seed = int(sys.argv[sys.argv.index("--seed") + 1])
    if cmd in ("trace", "workload"):
        data, exp = (gen_trace if cmd == "trace" else gen_workload)(seed)
        with open(sys.argv[2], "wb") as f:
            f.write(data)
        print(json.dumps(exp))
    elif cmd == "decode-wl":
        print(json.dumps(decode_wl(open(sys.argv[2], "rb").read())))
    elif cmd == "dj-trace2wl":
        wl = dj_trace2wl(open(sys.argv[2], "rb").read())
        open(sys.argv[3], "wb").write(wl)
        print(json.dumps(decode_wl(wl)))
    elif cmd == "decode-trace":
        print(json.dumps(decode_trace(open(sys.argv[2], "rb").read())))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
