/* fuzz_reader.h - the reader fuzz target, shared by libFuzzer and the
 * plain-C replay driver. */
#ifndef FUZZ_READER_H
#define FUZZ_READER_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
