package httpbackend

import "syscall"

// hugePages asks for 2 MiB pages: the first write of each small page
// faults, and a 14 MB body read into small pages took 22 ms where the same
// copy into the heap took 2.4 ms; with huge pages, 3.2 ms. Advice only: an
// error changes nothing.
func hugePages(b []byte) { syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
