package graph

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors of Parse and ParseReusing.
var (
	// ErrEncrypted: the document is an OpenTofu client-side encrypted state
	// (exactly OpenTofu's envelope, see EncryptionError), so its contents
	// cannot be read. Store it as an opaque blob.
	ErrEncrypted = errors.New("state is client-side encrypted")
	// ErrNoLineage: the state has no "lineage", or an empty one. Both CLIs
	// always write one, and versions of one state are told apart from
	// versions of another by it.
	ErrNoLineage = errors.New("state has no lineage")
	// ErrLean: RenderTo of a lean state (see State.Lean), which knows
	// its instances' hashes, not their objects.
	ErrLean = errors.New("a lean state does not render: its objects are not in it")
)

// SyntaxError is malformed JSON: the document is not one valid JSON value.
type SyntaxError struct {
	// Offset is the byte offset in the document where the problem was found
	// (the length of the document when it ended too early).
	Offset int64
	msg    string
}

// Error says what is wrong and where.
func (e *SyntaxError) Error() string {
	return "invalid JSON at byte " + strconv.FormatInt(e.Offset, 10) + ": " + e.msg
}

// VersionError is a state whose "version" is an integer other than 4. Both
// CLIs upgrade older formats when they read them and have written only
// version 4 since Terraform 0.12.
type VersionError struct {
	Version int
}

// Error names the version found.
func (e *VersionError) Error() string {
	return fmt.Sprintf("unsupported state format version %d: only version 4 is supported", e.Version)
}

// FieldError is valid JSON that is not a valid tfstate version 4 document: a
// field of the wrong type, an instance key that is neither an integer nor a
// string, a duplicate instance, and the like.
type FieldError struct {
	// Path locates the field, e.g. `resources[3].instances[0].index_key`.
	Path string
	// Offset is the byte offset of the field's value in the document.
	Offset int64
	// Reason says what is wrong with it.
	Reason string
}

// Error says which field is wrong and why.
func (e *FieldError) Error() string {
	return fmt.Sprintf("invalid state: %s (byte %d): %s", e.Path, e.Offset, e.Reason)
}

// EncryptionError is a document with a top-level "encryption_version" (in
// any spelling) that is not exactly the envelope OpenTofu writes for a
// client-side encrypted state: the keys "serial" (an integer or null) and
// "lineage" (a string), which OpenTofu may leave out, and "meta" (an
// object), "encrypted_data" (base64) and "encryption_version" (a non-empty
// string), each once, and nothing else. Such a document is neither: OpenTofu
// with encryption configured would try to decrypt it, and stored as opaque
// it would skip the lineage and serial guards, so it is refused.
type EncryptionError struct {
	// Reason says how the document departs from the envelope.
	Reason string
}

// Error says how the document departs from the envelope.
func (e *EncryptionError) Error() string {
	return "the state has an encryption_version but is not OpenTofu's encrypted envelope: " + e.Reason
}
