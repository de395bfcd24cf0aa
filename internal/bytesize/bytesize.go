package bytesize

import (
	"fmt"
	"strconv"
	"strings"
)

// Size is a size in bytes that reads and prints with binary or decimal
// units: "64MiB", "100MB", "512KiB", "1048576". It implements
// encoding.TextUnmarshaler, so flag parsers (kong) accept it as it is.
type Size int64

var sizeUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30},
	{"B", 1},
}

// UnmarshalText parses a size such as "64MiB" or "1048576".
func (s *Size) UnmarshalText(text []byte) error {
	str := strings.TrimSpace(string(text))
	factor := int64(1)
	for _, u := range sizeUnits {
		if len(str) > len(u.suffix) && strings.EqualFold(str[len(str)-len(u.suffix):], u.suffix) {
			factor = u.factor
			str = strings.TrimSpace(str[:len(str)-len(u.suffix)])
			break
		}
	}
	n, err := strconv.ParseInt(str, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/factor {
		return fmt.Errorf("%q is not a size: use a positive number of bytes with an optional unit (KiB, MiB, GiB, KB, MB, GB), e.g. 64MiB", string(text))
	}
	*s = Size(n * factor)
	return nil
}

// String prints the size with the largest binary unit that divides it.
func (s Size) String() string {
	for _, u := range []struct {
		suffix string
		factor int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if int64(s) >= u.factor && int64(s)%u.factor == 0 {
			return strconv.FormatInt(int64(s)/u.factor, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}
