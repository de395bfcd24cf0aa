package trust

import "unicode/utf8"

// matchGlob reports whether s matches pattern, where '*' matches any run of
// characters ('/' and ':' included, so "repo:org/app:*" matches every ref
// of org/app, as cloud providers' StringLike does) and '?' exactly one.
// Every other character matches itself: there is no escape, since claim
// values and state names never need a literal '*'.
//
// The loop backtracks only to the last '*', so it costs O(len(s) ×
// len(pattern)) at worst, and both are bounded (policy validation, token
// size).
func matchGlob(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == '?':
			_, n := utf8.DecodeRuneInString(s[i:])
			p, i = p+1, i+n
		case p < len(pattern) && pattern[p] == s[i]:
			p, i = p+1, i+1
		case star >= 0:
			// Let the last '*' swallow one more character and retry.
			_, n := utf8.DecodeRuneInString(s[mark:])
			mark += n
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// onlyWildcards reports whether pattern holds nothing but '*' and '?': a
// claim that constrains nothing worth trusting.
func onlyWildcards(pattern string) bool {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '*' && pattern[i] != '?' {
			return false
		}
	}
	return true
}
