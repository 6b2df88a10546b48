/* What ring's C code takes from <string.h>, for type-checking the workspace for macOS on a
 * machine without Apple's SDK (scripts/check-platforms.sh). Nothing built with it is run. */
#ifndef AI_SMARTNESS_CROSS_STRING_H
#define AI_SMARTNESS_CROSS_STRING_H
#include <stddef.h>
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
void *memmove(void *dst, const void *src, size_t n);
#endif
