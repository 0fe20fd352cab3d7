/* double_main.c: wh-serve-double, the real serve/certs commands over the
 * admission-pipeline test double (admit_double.c). Test-only. */
#include <stdio.h>  /* fprintf */
#include <string.h> /* strcmp */

#include "wh/commands.h" /* wh_cmd_serve, wh_cmd_certs */

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "serve"))
        return wh_cmd_serve(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "certs"))
        return wh_cmd_certs(argc - 1, argv + 1);
    fprintf(stderr, "usage: wh-serve-double serve|certs [flags]\n");
    return 2;
}
