/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by the libFuzzer targets and the standalone replay driver. */
#ifndef THP_FUZZ_H
#define THP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
