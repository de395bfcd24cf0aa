package httpbackend

import "github.com/kilolock/kilolock/internal/bytesize"

// ByteSize is a size in bytes that reads and prints with binary or decimal
// units: "64MiB", "100MB", "512KiB", "1048576" (bytesize.Size, which kl's
// flags take too).
type ByteSize = bytesize.Size
