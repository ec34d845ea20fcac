/*
 * outpath.c: see outpath.h.
 */
#include "api/outpath.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static const char *kind_of(mode_t m) {
  return S_ISDIR(m)    ? "a directory"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISFIFO(m) ? "a FIFO"
         : S_ISSOCK(m) ? "a socket"
                       : "not a regular file";
}

ooc_status_t outpath_check(ooc_ctx_t *ctx, const char *out_file, const char *const *inputs,
                           int ninputs) {
  struct stat o;
  if (!out_file || stat(out_file, &o) != 0) return OOC_OK; /* a new file: nothing to replace */
  if (!S_ISREG(o.st_mode))
    return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: the output path is %s, not a regular file: an output "
                    "replaces regular files only (even with --force); name another", out_file,
                    kind_of(o.st_mode));
  for (int k = 0; k < ninputs; k++) {
    struct stat in;
    if (!inputs[k] || !*inputs[k] || stat(inputs[k], &in) != 0) continue;
    if (in.st_dev == o.st_dev && in.st_ino == o.st_ino)
      return OOC_FAIL(ctx, OOC_ERR_ARG, "%s: the output would replace an input file ('%s' is "
                      "the same file, device %llu inode %llu); name another", out_file,
                      inputs[k], (unsigned long long)in.st_dev, (unsigned long long)in.st_ino);
  }
  return OOC_OK;
}

void outpath_derive(const char *file, const char *suffix, char *out, size_t cap) {
  const char *slash = strrchr(file, '/'), *dot = strrchr(file, '.');
  if (dot && dot != file && (!slash || dot > slash + 1))
    (void)ooc_fmt(out, cap, "%.*s%s%s", (int)(dot - file), file, suffix, dot);
  else
    (void)ooc_fmt(out, cap, "%s%s.h5", file, suffix);
}
