package bench

// Messages of other programs that bench looks for, quoted.

// quotePreloadFailed is part of what glibc's dynamic loader (ld.so) prints
// when an LD_PRELOAD object cannot be loaded; the program then runs without
// it.
const quotePreloadFailed = "cannot be preloaded"
