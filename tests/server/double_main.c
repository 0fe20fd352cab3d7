/* double_main.c: wh-serve-double, the real serve/certs commands, serve over
 * the admission-pipeline test double (admit_double.c) handed to it through
 * wh_cmd_serve_with. Test-only. */
#include <stdio.h>  /* fprintf */
#include <string.h> /* strcmp */

#include "admit_double.h" /* wh_test_admit_double */
#include "wh/commands.h"  /* wh_cmd_serve_with, wh_cmd_certs */

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "serve"))
        return wh_cmd_serve_with(argc - 1, argv + 1, &wh_test_admit_double);
    if (argc >= 2 && !strcmp(argv[1], "certs"))
        return wh_cmd_certs(argc - 1, argv + 1);
    fprintf(stderr, "usage: wh-serve-double serve|certs [flags]\n");
    return 2;
}
