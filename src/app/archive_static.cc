// Linked into firstfault only in the portable build (cmake/FFPortable.cmake), which links
// Debian's libarchive.a. Its pax and ustar writers (bundle.cc writes pax) call one helper,
// __archive_write_entry_filetype_unsupported, that lives in archive_write_set_format.o
// beside the table of every writer libarchive has (archive_write_set_format by code). Pulled
// in for the helper, that table pulls every writer, the XAR one among them, and XAR needs
// libxml2, which needs ICU: the link fails (issue 35). Defined here, the helper keeps that
// object, the other writers and libxml2 out of the link; a libarchive whose other members
// needed that object again would fail the link with a duplicate definition, not quietly.
//
// What it does: the error a writer reports for an entry of a type its format cannot hold
// (a socket in ustar, say), with libarchive's error number for a format error on Linux
// (ARCHIVE_ERRNO_FILE_FORMAT, private to it: EILSEQ). firstfault's bundle writes regular
// files only.
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>

extern "C" void __archive_write_entry_filetype_unsupported(struct archive* a, struct archive_entry* entry,
                                                           const char* format) {
  const char* kind = "this file type";
  switch (archive_entry_filetype(entry)) {
    case AE_IFDIR: kind = "directories"; break;
    case AE_IFLNK: kind = "symbolic links"; break;
    case AE_IFCHR: kind = "character devices"; break;
    case AE_IFBLK: kind = "block devices"; break;
    case AE_IFIFO: kind = "named pipes"; break;
    case AE_IFSOCK: kind = "sockets"; break;
    default: break;
  }
  const char* path = archive_entry_pathname(entry);
  archive_set_error(a, EILSEQ, "%s: %s format cannot archive %s", path ? path : "(no name)", format, kind);
}
