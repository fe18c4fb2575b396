/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the dmatok KUnit suites.
 */
#ifndef _DMATOK_KUNIT_H
#define _DMATOK_KUNIT_H

#include <kunit/test.h>

/* One cell of an offset x length grid: a byte range of a dma-buf. */
struct dmatok_geom {
	unsigned int off;
	unsigned int len;
};

static inline void dmatok_geom_desc(struct kunit *test, const void *param,
				    char *desc)
{
	const struct dmatok_geom *g = param;

	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "off=%u len=%u", g->off, g->len);
}

/*
 * Register every offset of @offs with every length of @lens as the
 * parameters of the running case; for a case's param_init.
 */
static inline int dmatok_geom_register(struct kunit *test,
				       const unsigned int *offs, size_t nr_offs,
				       const unsigned int *lens, size_t nr_lens)
{
	struct dmatok_geom *geoms;
	size_t o, l, n = 0;

	geoms = kunit_kcalloc(test, nr_offs * nr_lens, sizeof(*geoms), GFP_KERNEL);
	if (!geoms)
		return -ENOMEM;

	for (o = 0; o < nr_offs; o++) {
		for (l = 0; l < nr_lens; l++) {
			geoms[n].off = offs[o];
			geoms[n].len = lens[l];
			n++;
		}
	}

	kunit_register_params_array(test, geoms, n, dmatok_geom_desc);
	return 0;
}

#endif /* _DMATOK_KUNIT_H */
