/* convert.c: prints npuverify.h's conversions of the values on stdin, for
 * client_test.go. A line "f HEX" (float32 bits) prints the fp16 and bf16
 * bits of nv_f32_to_f16 and nv_f32_to_bf16; "h HEX" (fp16 bits) prints
 * the float32 bits of nv_f16_to_f32. */
#define NPUVERIFY_IMPLEMENTATION
#include "../npuverify.h"

#include <stdio.h>
#include <string.h>

int main(void) {
	char kind;
	unsigned long v;
	while (scanf(" %c %lx", &kind, &v) == 2) {
		if (kind == 'f') {
			uint32_t u = (uint32_t)v;
			float f;
			memcpy(&f, &u, 4);
			printf("%04x %04x\n", (unsigned)nv_f32_to_f16(f), (unsigned)nv_f32_to_bf16(f));
		} else {
			float f = nv_f16_to_f32((uint16_t)v);
			uint32_t u;
			memcpy(&u, &f, 4);
			printf("%08lx\n", (unsigned long)u);
		}
	}
	return 0;
}
