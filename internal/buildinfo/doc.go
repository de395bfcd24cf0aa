// Package buildinfo tells which build of kilolock is running: the version
// and commit stamped by scripts/version.sh through -ldflags, with the Go
// toolchain's own record as the fallback.
//
// The version scheme: a release is the tag vX.Y.Z on its commit ("X.Y.Z");
// N commits later the build is "X.Y.(Z+1)-dev.N", which sorts after the
// release and before the next one; a checkout with no tag is
// "0.1.0-dev.N" with N its commit count.
//
//	info := buildinfo.Info()
//	fmt.Println(info.Version, info.Commit, info.GoVersion)
package buildinfo
