/* admit_double.h: the admission-pipeline test double of wh-serve-double
 * (admit_double.c), in the form serve takes a pipeline (wh/commands.h). Its
 * start allocates the double's state, its stop frees it. Test-only. */
#ifndef WH_TEST_ADMIT_DOUBLE_H
#define WH_TEST_ADMIT_DOUBLE_H

#include "wh/commands.h" /* struct wh_serve_pipeline */

extern const struct wh_serve_pipeline wh_test_admit_double;

#endif /* WH_TEST_ADMIT_DOUBLE_H */
