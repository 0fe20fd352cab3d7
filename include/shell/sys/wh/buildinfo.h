/* buildinfo.h: what build this is (cmake/buildinfo.cmake writes the
 * definitions into the build tree).
 *
 * version: CMakeLists.txt's project(VERSION), e.g. "0.1.0".
 * commit: the git commit built, 12 hex digits, "-dirty" when the tree had
 *   changes to tracked files; "unknown" when not built from git.
 * date: SOURCE_DATE_EPOCH when set, else the commit's date, as RFC 3339 UTC
 *   ("2026-12-01T22:47:11Z"); "unknown" when neither is known.
 * All three are static strings: nothing to free.
 */
#ifndef WH_BUILDINFO_H
#define WH_BUILDINFO_H

const char *wh_build_version(void);
const char *wh_build_commit(void);
const char *wh_build_date(void);

#endif
