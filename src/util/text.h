/* Text that came from someone else (a recording's thread, zone and app names, a peer's JSON)
 * made safe to print: a name may hold terminal escapes or a newline that forges a log line. */
#ifndef FSCOPE_UTIL_TEXT_H
#define FSCOPE_UTIL_TEXT_H

#include <stddef.h>

/* Copies at most src_len bytes of src (up to its NUL) into dst as printable text: control
 * bytes (C0, DEL and the C1 range), backslashes and bytes that are not valid UTF-8 become
 * "\xNN"; valid UTF-8 passes as it is. Cut at a whole character or escape when dst is too
 * small; dst is always terminated (dst_len >= 1). Returns dst. */
char *fscope_text_printable(char *dst, size_t dst_len, const char *src, size_t src_len);
/* The same for text made printable once already (names in framescoped's replies, in a
 * capture's files): its backslashes are kept, so "\x1b" is not shown as "\x5cx1b". Whatever
 * src holds, nothing a terminal acts on comes out. */
char *fscope_text_shown(char *dst, size_t dst_len, const char *src, size_t src_len);

#endif
