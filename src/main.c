/* main.c: the tpu-webhook binary; the command table is wh_cli_main's
 * (src/shell/cli/cli.c). */
#include "wh/commands.h" /* wh_cli_main */

int main(int argc, char **argv)
{
    return wh_cli_main(argc, argv);
}
