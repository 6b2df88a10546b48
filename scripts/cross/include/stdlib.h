/* See string.h: ring includes <stdlib.h> and uses nothing of it the check needs. */
#ifndef AI_SMARTNESS_CROSS_STDLIB_H
#define AI_SMARTNESS_CROSS_STDLIB_H
#include <stddef.h>
void abort(void);
#endif
