/* Unnamed files on disk (O_TMPFILE): gone with their last descriptor, whatever ends the
 * process. The recording's stream file is one, made by the app or by framescope run. */
#ifndef FSCOPE_UTIL_UNNAMED_FILE_H
#define FSCOPE_UTIL_UNNAMED_FILE_H

/* An unnamed read-write file in tmpdir (the caller's $TMPDIR; NULL or not absolute: skipped),
 * else /var/tmp (on disk in Debian, where /tmp may be a tmpfs, i.e. memory), else /tmp.
 * Returns its descriptor (close-on-exec), or -1 when no directory takes one. */
int unnamed_file_create(const char *tmpdir);

#endif
