/* See string.h: the Apple SDK header that says which Apple OS is targeted (macOS here). */
#ifndef AI_SMARTNESS_CROSS_TARGET_CONDITIONALS_H
#define AI_SMARTNESS_CROSS_TARGET_CONDITIONALS_H
#define TARGET_OS_MAC 1
#define TARGET_OS_OSX 1
#define TARGET_OS_IPHONE 0
#endif
