/* memtune.h: process-wide allocator settings for the server (shell only).
 *
 * A review of a large slice allocates and frees buffers of hundreds of KiB
 * (address lists, the patch, its base64). With glibc's defaults each of
 * those is mmap'd and munmap'd, so every review pays page faults and page
 * zeroing: about a third of the time of a 1,024-host legacy slice. Keeping
 * such blocks in the heap (and not trimming it below 32 MiB) removes that;
 * memory stays bounded by the peak of concurrent reviews.
 */
#ifndef WH_MEMTUNE_H
#define WH_MEMTUNE_H

/* Apply the settings; call once at start-up, before threads start. */
void wh_memtune_server(void);

#endif
