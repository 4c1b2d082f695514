/* SPDX-License-Identifier: Apache-2.0 */
/* th_text.h: checks on the text the program and Check write: a line that
 * holds two strings, and a well-formed XML document (Check's XML log, the
 * JUnit reports), checked without a library. */
#ifndef GPUIPC_TESTS_TH_TEXT_H
#define GPUIPC_TESTS_TH_TEXT_H

#include <stddef.h>

/* Returns 1 if one line of text contains both a and b. */
int th_line_has(const char *text, const char *a, const char *b);

/* Checks that the n bytes at text are one well-formed XML document in
 * UTF-8: an XML declaration first, then one root element with its elements
 * properly nested and closed, attribute values quoted, no control character
 * (NUL included), and '&' only in the five predefined entities or a
 * character reference. No DTD is read (a DOCTYPE is rejected). Returns 1,
 * or 0 with the offset and what was wrong in why (len bytes). */
int th_xml_valid(const char *text, size_t n, char *why, size_t len);

#endif
