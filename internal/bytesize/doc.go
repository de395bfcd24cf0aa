// Package bytesize reads and prints sizes in bytes with units ("64MiB"),
// as kld's and kl's flags take them:
//
//	var s bytesize.Size
//	_ = s.UnmarshalText([]byte("64MiB")) // s == 64 << 20; s.String() == "64MiB"
package bytesize
