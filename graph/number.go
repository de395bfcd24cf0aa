package graph

import (
	"math/big"
	"strconv"
)

// appendCanonicalNumber appends the canonical spelling of the valid JSON
// number literal tok: its exact decimal value written as ECMAScript writes
// a double (see Canonical). With s the significant digits (k of them, no
// leading or trailing zeros) and the value s × 10^(n−k):
//
//	k ≤ n ≤ 21    s followed by n−k zeros            12300
//	0 < n ≤ 21    s with a point after n digits      12.3
//	−6 < n ≤ 0    "0." and −n zeros before s         0.000123
//	otherwise     d[.ddd]e±(n−1)                     1.23e+21, 1.23e-7
//
// Zero, with any sign, is "0". The output is never longer than the literal
// plus a few bytes, whatever its exponent says.
func appendCanonicalNumber(dst, tok []byte) []byte {
	neg := tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	i := 0
	for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
		i++
	}
	intPart := tok[:i]
	var frac []byte
	if i < len(tok) && tok[i] == '.' {
		j := i + 1
		for j < len(tok) && tok[j] >= '0' && tok[j] <= '9' {
			j++
		}
		frac = tok[i+1 : j]
		i = j
	}
	var exp []byte
	if i < len(tok) { // 'e' or 'E'
		exp = tok[i+1:]
	}

	// The digits are intPart followed by frac; find the significant ones.
	at := func(k int) byte {
		if k < len(intPart) {
			return intPart[k]
		}
		return frac[k-len(intPart)]
	}
	total := len(intPart) + len(frac)
	first := 0
	for first < total && at(first) == '0' {
		first++
	}
	if first == total {
		return append(dst, '0')
	}
	last := total
	for at(last-1) == '0' {
		last--
	}
	k := last - first
	// The value is 0.d₁d₂… × 10^(len(intPart)+exp) over all digits; n is the
	// position of the point relative to the first significant one.
	shift := int64(len(intPart) - first)
	e, small := parseExponent(exp)
	if !small {
		return appendBigExponentNumber(dst, neg, first, last, at, shift, exp)
	}
	n := shift + e

	if neg {
		dst = append(dst, '-')
	}
	digits := func(from, to int) {
		for d := from; d < to; d++ {
			dst = append(dst, at(first+d))
		}
	}
	switch {
	case int64(k) <= n && n <= 21:
		digits(0, k)
		for z := int64(k); z < n; z++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		digits(0, int(n))
		dst = append(dst, '.')
		digits(int(n), k)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for z := n; z < 0; z++ {
			dst = append(dst, '0')
		}
		digits(0, k)
	default:
		digits(0, 1)
		if k > 1 {
			dst = append(dst, '.')
			digits(1, k)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, n-1, 10)
	}
	return dst
}

// parseExponent reads an exponent ("+12", "-3", "007") when it has at most
// 15 significant digits, which keeps every sum with a literal's length far
// inside int64; small is false for a longer one.
func parseExponent(exp []byte) (e int64, small bool) {
	if len(exp) == 0 {
		return 0, true
	}
	neg := exp[0] == '-'
	if exp[0] == '-' || exp[0] == '+' {
		exp = exp[1:]
	}
	for len(exp) > 0 && exp[0] == '0' {
		exp = exp[1:]
	}
	if len(exp) > 15 {
		return 0, false
	}
	for _, c := range exp {
		e = e*10 + int64(c-'0')
	}
	if neg {
		e = -e
	}
	return e, true
}

// appendBigExponentNumber is appendCanonicalNumber for an exponent too long
// for int64 arithmetic: always the exponent form, with n−1 computed
// exactly. No state either CLI can read has such a number (cty's parser
// rejects it), but two of them must still compare by value.
func appendBigExponentNumber(dst []byte, neg bool, first, last int, at func(int) byte, shift int64, exp []byte) []byte {
	var e big.Int
	e.SetString(string(exp), 10) // a valid exponent: sign and digits
	e.Add(&e, big.NewInt(shift-1))
	if neg {
		dst = append(dst, '-')
	}
	dst = append(dst, at(first))
	if last-first > 1 {
		dst = append(dst, '.')
		for d := first + 1; d < last; d++ {
			dst = append(dst, at(d))
		}
	}
	dst = append(dst, 'e')
	if e.Sign() >= 0 {
		dst = append(dst, '+')
	}
	return e.Append(dst, 10)
}
