/* out_flamesvg.c - see out_flamesvg.h. */
#include "output/out_flamesvg.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util_fmt.h"

#define SVG_W	1200.0
#define FRAME_H 16
#define PAD_TOP 36
#define MIN_W	0.1 /* narrower frames are left out */

struct node {
	char *name;
	uint64_t value; /* inclusive */
	struct node **kid;
	size_t nkid, cap;
};

struct out_flame {
	struct node root;
	unsigned depth;
};

struct out_flame *out_flame_new(void)
{
	return calloc(1, sizeof(struct out_flame));
}

static struct node *child(struct node *n, const char *name, size_t len)
{
	for (size_t i = 0; i < n->nkid; i++)
		if (strlen(n->kid[i]->name) == len && !memcmp(n->kid[i]->name, name, len))
			return n->kid[i];
	if (n->nkid == n->cap) {
		size_t nc = n->cap ? n->cap * 2 : 4;
		struct node **k = realloc(n->kid, nc * sizeof(*k));
		if (!k)
			return NULL;
		n->kid = k;
		n->cap = nc;
	}
	struct node *c = calloc(1, sizeof(*c));
	if (!c || !(c->name = strndup(name, len))) {
		free(c);
		return NULL;
	}
	n->kid[n->nkid++] = c;
	return c;
}

int out_flame_add(struct out_flame *fl, const char *key, uint64_t value)
{
	struct node *n = &fl->root;
	unsigned d = 0;
	n->value += value;
	for (const char *p = key; *p;) {
		const char *e = strchr(p, ';');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (!(n = child(n, p, len)))
			return ATR_E_NOMEM;
		n->value += value;
		d++;
		p += len;
		if (*p == ';')
			p++;
	}
	if (d > fl->depth)
		fl->depth = d;
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp((*(struct node *const *)a)->name, (*(struct node *const *)b)->name);
}

/* Warm colours from the name, so a function keeps its colour. */
static void colour(const char *name, unsigned *r, unsigned *g, unsigned *b)
{
	uint32_t h = 2166136261u;
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	*r = 205 + h % 50;
	*g = (h >> 8) % 180;
	*b = (h >> 16) % 55;
}

static void draw(FILE *out, struct node *n, double x, unsigned depth, unsigned maxd, double scale,
		 uint64_t total, const char *unit)
{
	if (n->nkid == 0)
		return; /* a leaf: no array to sort (qsort(NULL, 0) is undefined) */
	qsort(n->kid, n->nkid, sizeof(*n->kid), cmp_name);
	for (size_t i = 0; i < n->nkid; i++) {
		struct node *k = n->kid[i];
		double w = (double)k->value * scale;
		if (w >= MIN_W) {
			double y = PAD_TOP + (double)(maxd - depth - 1) * FRAME_H;
			unsigned r, g, b;
			colour(k->name, &r, &g, &b);
			fprintf(out, "<g><title>");
			util_fputs_html(out, k->name, 4096);
			fprintf(out, " (%" PRIu64 " %s, %.2f%%)</title>", k->value, unit,
				100.0 * (double)k->value / (double)total);
			fprintf(out,
				"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
				"fill=\"rgb(%u,%u,%u)\" rx=\"2\"/>",
				x, y, w, FRAME_H - 1, r, g, b);
			size_t chars = (size_t)((w - 6) / 7);
			if (chars >= 3) {
				fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">", x + 3,
					y + FRAME_H - 4);
				size_t len = strlen(k->name);
				if (len <= chars) {
					util_fputs_html(out, k->name, len);
				} else {
					util_fputs_html(out, k->name, chars - 2);
					fputs("..", out);
				}
				fputs("</text>", out);
			}
			fputs("</g>\n", out);
			draw(out, k, x, depth + 1, maxd, scale, total, unit);
		}
		x += w;
	}
}

int out_flame_svg(const struct out_flame *fl, FILE *out, const char *title, const char *unit)
{
	struct out_flame *f = (struct out_flame *)fl; /* sorting children in place */
	unsigned maxd = f->depth ? f->depth : 1;
	int height = PAD_TOP + (int)maxd * FRAME_H + 8;
	uint64_t total = f->root.value ? f->root.value : 1;
	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n"
		"<style>text{font-family:monospace;font-size:12px;fill:#000}"
		"rect:hover{stroke:#000;stroke-width:0.5}</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		"<text x=\"%d\" y=\"22\" style=\"font-size:16px\" text-anchor=\"middle\">",
		(int)SVG_W, height, (int)SVG_W, height, (int)(SVG_W / 2));
	util_fputs_html(out, title, 512);
	fprintf(out, " (%" PRIu64 " %s)</text>\n", f->root.value, unit);
	draw(out, &f->root, 0, 0, maxd, SVG_W / (double)total, total, unit);
	fputs("</svg>\n", out);
	return ferror(out) ? ATR_E_WRITE : 0;
}

static void free_node(struct node *n)
{
	for (size_t i = 0; i < n->nkid; i++) {
		free_node(n->kid[i]);
		free(n->kid[i]);
	}
	free(n->kid);
	free(n->name);
}

void out_flame_free(struct out_flame *fl)
{
	if (!fl)
		return;
	free_node(&fl->root);
	free(fl);
}
