/* SPDX-License-Identifier: Apache-2.0 */
/* doc_check.c: build/tests/doc_check SCHEMA DOC...: holds each result
 * document against the schema (tests/jschema.c), for documents written on
 * a GPU machine, which has no other JSON tool. Exits 0 if every one
 * passes, 1 otherwise, naming the first violation. */
#include <stdio.h>
#include <stdlib.h>

#include "jschema.h"
#include "th_files.h"

int main(int argc, char **argv)
{
    char why[512];
    size_t n;
    char *text = argc > 1 ? th_read_file(argv[1], &n) : NULL;
    jnode *schema = text ? js_parse(text, why, sizeof(why)) : NULL;
    int i, bad = 0;

    if (schema == NULL) {
        fprintf(stderr, "doc_check: usage: doc_check SCHEMA DOC...; %s\n",
                text ? why : "the schema cannot be read");
        return 2;
    }
    free(text);
    for (i = 2; i < argc; i++) {
        jnode *doc;

        if ((text = th_read_file(argv[i], &n)) == NULL) {
            printf("%s: cannot be read\n", argv[i]);
            bad = 1;
            continue;
        }
        doc = js_parse(text, why, sizeof(why));
        if (doc == NULL || !js_check(schema, doc, why, sizeof(why))) {
            printf("%s: INVALID: %s\n", argv[i], why);
            bad = 1;
        } else {
            printf("%s: valid (schema_version 3)\n", argv[i]);
        }
        js_free(doc);
        free(text);
    }
    js_free(schema);
    return bad;
}
