/* hex.h: the value of a hexadecimal digit, for the parsers that read one
 * (percent-encoding in request paths, YAML integers in bases 2 to 16).
 * Pure; nothing is allocated. */
#ifndef WH_HEX_H
#define WH_HEX_H

/* 0-15 for '0'-'9', 'a'-'f' and 'A'-'F'; -1 for any other character. */
int wh_hex_digit(char c);

#endif /* WH_HEX_H */
