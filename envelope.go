package kilolock

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/kilolock/kilolock/graph"
)

// An OpenTofu client-side encrypted state is an envelope whose clear part
// carries the state's serial and lineage (OpenTofu copies them out for
// backends) and, in meta, one entry per key provider. The Engine keeps the
// envelope as an opaque version and holds it to the guards plaintext
// states have: the serial and lineage rules of CheckCommit, and on an
// optimistic state, since an opaque body cannot be merged, fast-forwards
// only (see fastForward).

// envelopeVersion sets c, an opaque version, from the envelope's clear
// part. An envelope without a serial or a lineage could not be guarded: it
// is refused, unless the write is forced (the guards are skipped then
// anyway), when the stored serial and lineage stand in for what it lacks.
func envelopeVersion(c *Commit, env *graph.Envelope, st *State, force bool) error {
	c.Version.Format = FormatOpaque
	c.ClientEncryption = clientEncryption(env)
	c.Version.Serial, c.Version.Lineage = env.Serial, env.Lineage
	if env.HasSerial && env.Lineage != "" {
		return nil
	}
	if !force {
		var missing []string
		if !env.HasSerial {
			missing = append(missing, "serial")
		}
		if env.Lineage == "" {
			missing = append(missing, "lineage")
		}
		what := strings.Join(missing, " and ")
		return &InvalidError{
			Code:    "encrypted_state_incomplete",
			Message: fmt.Sprintf("the client-side encrypted state carries no %s in the clear, so the lineage and serial guards cannot check it", what),
			Hint:    "OpenTofu 1.7 and later write serial and lineage beside encrypted_data: send the state as tofu writes it (upgrade tofu if it is older); nothing was stored",
		}
	}
	if !env.HasSerial {
		c.Version.Serial = st.Serial
	}
	if env.Lineage == "" {
		c.Version.Lineage = st.Lineage
	}
	return nil
}

// clientEncryption is what ClientEncryption keeps of an envelope: its
// encryption_version and its meta's key providers, by name only.
func clientEncryption(env *graph.Envelope) *ClientEncryption {
	ce := &ClientEncryption{Version: env.Version, KeyProviders: make([]KeyProvider, 0, len(env.MetaKeys)), MoreKeyProviders: env.MoreMetaKeys}
	for _, k := range env.MetaKeys {
		ce.KeyProviders = append(ce.KeyProviders, keyProvider(k))
	}
	return ce
}

// keyProvider reads a key of an envelope's meta: OpenTofu keys a key
// provider's metadata by its address, key_provider.TYPE.NAME, or by the
// encrypted_metadata_alias the configuration gives it.
func keyProvider(key string) KeyProvider {
	rest, ok := strings.CutPrefix(key, "key_provider.")
	typ, name, dot := strings.Cut(rest, ".")
	if ok && dot && providerName(typ) && providerName(name) {
		return KeyProvider{Type: typ, Name: name}
	}
	// Shown to people: no control or bidi characters, whatever the
	// client sent.
	return KeyProvider{Alias: strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return unicode.ReplacementChar
		}
		return r
	}, key)}
}

// providerName reports whether s is a name OpenTofu accepts for a key
// provider's type or name: a letter or underscore, then letters, digits,
// underscores and dashes.
func providerName(s string) bool {
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && (c == '-' || '0' <= c && c <= '9'):
		default:
			return false
		}
	}
	return s != ""
}
