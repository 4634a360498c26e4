package table

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/redact"
)

// Client-side encryption ("Encrypting table data" in the guide), modelled
// on Azure Storage client-side encryption v2: fields tagged
// `table:",encrypt"` leave the process as Edm.Binary ciphertext.
//
//   - Each write draws a fresh 256-bit content key; every encrypted
//     property is sealed with AES-256-GCM under it, with a fresh nonce.
//   - The content key travels wrapped by a key-encryption key that the
//     caller's KeyWrapper holds, named by a key ID (rotation: new writes use
//     Encryption.KeyID, older IDs stay readable while Keys knows them).
//   - Each ciphertext's associated data binds it to the table, the
//     PartitionKey, the RowKey, its property name, the key ID and the list
//     of encrypted properties, so it cannot be moved to another table,
//     entity or property, nor read under another list.
//   - The list of encrypted properties is authenticated by a tag under the
//     content key (a GCM seal of nothing, with the same bindings), so
//     deleting a property together with its list entry is detected, and so
//     is deleting the envelope and every encrypted property.
//   - Each plaintext is padded to a multiple of Encryption.PadTo bytes, so
//     a stored length shows only its bucket.
//
// Any failure to open an entity is an *IntegrityError (errors.Is
// ErrIntegrity and ErrDecrypt), never a silent zero value.
//
// What stays visible to whoever reads the table: PartitionKey, RowKey,
// Timestamp and ETag, every property not tagged encrypt, which encrypted
// properties an entity has (their names), each encrypted value's length
// rounded up to PadTo, and the key ID. What encryption alone cannot detect:
// a rollback of the whole entity to an earlier write of itself (every
// property and the envelope put back together authenticate, as they did
// then). To detect it, keep a version the reader knows from elsewhere (a
// counter property that every write increases under the ETag, checked
// against the version a message or index carries), or keep the ETag you
// last wrote and compare.

// encryptionProperty is the property that carries an encrypted entity's
// envelope: the wrapped content key, its key ID, the names of the
// encrypted properties and the tag that authenticates them.
const encryptionProperty = "TkEncryption"

// encryptionVersion is the envelope's format; entities of another version
// are refused with an IntegrityError. Version 1 (before authentication of
// the property list and of the table) is no longer read: rewrite such
// entities with the version that wrote them.
const encryptionVersion = 2

// defaultPadTo is the bucket, in bytes, that an encrypted value's plaintext
// is rounded up to unless Encryption.PadTo says otherwise.
const defaultPadTo = 32

// KeyWrapper wraps and unwraps content keys with key-encryption keys it
// knows by ID: a key vault, a KMS, or LocalKeys. WrapKey must be
// authenticated (tampering with the wrapped key must make UnwrapKey fail).
type KeyWrapper interface {
	WrapKey(ctx context.Context, keyID string, contentKey []byte) ([]byte, error)
	UnwrapKey(ctx context.Context, keyID string, wrapped []byte) ([]byte, error)
}

// Encryption configures client-side encryption of a Table's tagged fields.
type Encryption struct {
	// KeyID names the key-encryption key that new writes use. Entities
	// written under older IDs stay readable while Keys still knows them;
	// rewriting an entity (Update with Replace, Modify) moves it to KeyID.
	KeyID string
	// Keys wraps and unwraps the content keys.
	Keys KeyWrapper
	// Table is the table name bound into every ciphertext, so a ciphertext
	// or a whole entity copied to another table does not open there. Set
	// it to the original name when you restore a copy into another table.
	// Default: the name of the table the Table's client addresses, when
	// the client is an *aztables.Client (the fake's clients are too); with
	// any other Client it is required, and reads and writes fail with
	// ErrBadOption without it.
	Table string
	// PadTo rounds each encrypted value's plaintext up to a multiple of
	// PadTo bytes before sealing, so its stored length shows only that
	// bucket. Negative: no padding. Default: 32.
	PadTo int
}

// Errors of encryption, matched with errors.Is.
var (
	// ErrEncryptedType: the operation would carry an encrypted type's
	// fields in plaintext (Registry, batch operations); use the Table's
	// I/O methods.
	ErrEncryptedType = errors.New("type has encrypted fields")
	// ErrMergeEncrypted: a merge of an entity with encrypted properties;
	// the stored properties would keep a content key the write replaces,
	// so such entities are written with Replace only.
	ErrMergeEncrypted = errors.New("merge of an entity with encrypted properties")
	// ErrDecrypt: an encrypted entity could not be opened: the key is
	// wrong or unknown, or the stored data was tampered with. Every
	// *IntegrityError matches it.
	ErrDecrypt = errors.New("cannot decrypt")
	// ErrIntegrity: an encrypted entity failed its integrity check; the
	// error is an *IntegrityError naming the entity, property and reason.
	ErrIntegrity = errors.New("encrypted entity fails its integrity check")
	// ErrEncryptedFilter: a query filter compares an encrypted property.
	// The service holds only ciphertext, which no literal matches, so the
	// query would silently return nothing; it is refused before sending.
	ErrEncryptedFilter = errors.New("filter on an encrypted property")
)

// IntegrityError is an encrypted entity that cannot be opened as written:
// a key that does not unwrap, a ciphertext or list that does not
// authenticate, a property missing, moved or in plaintext. It matches
// ErrIntegrity and ErrDecrypt; Err, when set, is the KeyWrapper's error.
type IntegrityError struct {
	Type         string // the Go type read
	Table        string // the table name the ciphertexts are bound to
	PartitionKey string
	RowKey       string
	Property     string // the property at fault, when one is
	Reason       string
	Err          error
}

// Error names the entity, the property and what failed.
func (e *IntegrityError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table: %s %s(%q, %q)", e.Type, e.Table, e.PartitionKey, e.RowKey)
	if e.Property != "" {
		b.WriteString(".")
		b.WriteString(e.Property)
	}
	b.WriteString(": ")
	b.WriteString(ErrIntegrity.Error())
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(redact.Line(e.Err))
	}
	return b.String()
}

// Is matches ErrIntegrity and ErrDecrypt.
func (e *IntegrityError) Is(target error) bool { return target == ErrIntegrity || target == ErrDecrypt }

// Unwrap returns the KeyWrapper's error, if any.
func (e *IntegrityError) Unwrap() error { return e.Err }

// LocalKeys is a KeyWrapper over 32-byte AES keys held in memory, by ID,
// wrapping with AES-256-GCM. For tests and for keys you load yourself;
// prefer a key vault in production.
type LocalKeys map[string][]byte

// WrapKey seals contentKey under the key named keyID.
func (k LocalKeys) WrapKey(_ context.Context, keyID string, contentKey []byte) ([]byte, error) {
	aead, err := k.aead(keyID)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return aead.Seal(nonce, nonce, contentKey, []byte(keyID)), nil
}

// UnwrapKey opens a key WrapKey sealed under keyID.
func (k LocalKeys) UnwrapKey(_ context.Context, keyID string, wrapped []byte) ([]byte, error) {
	aead, err := k.aead(keyID)
	if err != nil {
		return nil, err
	}
	if len(wrapped) < aead.NonceSize() {
		return nil, errors.New("wrapped key too short")
	}
	return aead.Open(nil, wrapped[:aead.NonceSize()], wrapped[aead.NonceSize():], []byte(keyID))
}

func (k LocalKeys) aead(keyID string) (cipher.AEAD, error) {
	key, ok := k[keyID]
	if !ok {
		return nil, fmt.Errorf("no key %q", keyID)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("key %q is %d bytes, want 32", keyID, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// envelope is the encryptionProperty's value.
type envelope struct {
	V     int      `json:"v"`
	KeyID string   `json:"kid"`
	Key   []byte   `json:"key"` // the wrapped content key
	Props []string `json:"p"`   // the encrypted properties, in the order written
	Tag   []byte   `json:"t"`   // nonce and GCM tag over the bindings and Props
}

// splitEntity reads an entity's JSON into its members and its keys.
func splitEntity(data []byte) (m map[string]json.RawMessage, pk, rk string, err error) {
	if err = json.Unmarshal(data, &m); err != nil {
		return nil, "", "", err
	}
	_ = json.Unmarshal(m["PartitionKey"], &pk)
	_ = json.Unmarshal(m["RowKey"], &rk)
	return m, pk, rk, nil
}

// binding is what every ciphertext of one write is bound to.
type binding struct {
	table, pk, rk, keyID string
	props                []string
}

// aad is the associated data of one seal: a purpose ("list" for the list's
// tag, "prop" for a property) and property name, then the bindings, each
// length-prefixed so no two different bindings encode alike.
func (b *binding) aad(purpose, name string) []byte {
	out := []byte("tablekit/encryption/v2")
	add := func(s string) {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	add(purpose)
	add(name)
	add(b.table)
	add(b.pk)
	add(b.rk)
	add(b.keyID)
	out = binary.AppendUvarint(out, uint64(len(b.props)))
	for _, p := range b.props {
		add(p)
	}
	return out
}

// boundTable is the table name ciphertexts are bound to (see
// Encryption.Table); "" when none is known.
func (t *Table[T]) boundTable() string {
	if t.enc.Table != "" {
		return t.enc.Table
	}
	return clientTableName(t.client)
}

// clientTableName reads the table name an *aztables.Client addresses. The
// SDK keeps it unexported and offers no accessor; reading it through
// reflect is guarded, so a future SDK without the field yields "" and
// Encryption.Table becomes required, loudly, rather than the binding
// silently weakening.
func clientTableName(c Client) string {
	tc, ok := c.(*aztables.Client)
	if !ok || tc == nil {
		return ""
	}
	f := reflect.ValueOf(tc).Elem().FieldByName("name")
	if !f.IsValid() || f.Kind() != reflect.String {
		return ""
	}
	return f.String()
}

func (t *Table[T]) padTo() int {
	switch {
	case t.enc.PadTo < 0:
		return 1
	case t.enc.PadTo == 0:
		return defaultPadTo
	}
	return t.enc.PadTo
}

// newAEAD is AES-256-GCM under a 32-byte key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// encrypt replaces the encrypted properties of body (as the plan encodes
// it) with ciphertext and adds the encryptionProperty.
func (t *Table[T]) encrypt(ctx context.Context, body []byte) ([]byte, error) {
	tableName := t.boundTable()
	if tableName == "" {
		return nil, inputErr("encrypt", t.plan.typ.String(), "", ErrBadOption, "set Encryption.Table: the client does not say which table it addresses, and ciphertexts are bound to it")
	}
	m, pk, rk, err := splitEntity(body)
	if err != nil {
		return nil, err
	}
	cek := make([]byte, 32)
	_, _ = rand.Read(cek)
	aead, _ := newAEAD(cek)
	b := &binding{table: tableName, pk: pk, rk: rk, keyID: t.enc.KeyID}
	for _, name := range t.plan.encrypted {
		if _, ok := m[name]; ok { // omitted (omitempty, nil pointer): nothing to hide
			b.props = append(b.props, name)
		}
	}
	env := envelope{V: encryptionVersion, KeyID: t.enc.KeyID, Props: b.props}
	pad := t.padTo()
	for _, name := range b.props {
		frag := map[string]json.RawMessage{name: m[name]}
		if a, ok := m[name+"@odata.type"]; ok {
			frag[name+"@odata.type"] = a
		}
		plain, _ := json.Marshal(frag)
		// JSON ignores trailing white space: pad with spaces.
		if r := len(plain) % pad; r != 0 {
			plain = append(plain, bytes.Repeat([]byte{' '}, pad-r)...)
		}
		nonce := make([]byte, aead.NonceSize())
		_, _ = rand.Read(nonce)
		sealed := aead.Seal(nonce, nonce, plain, b.aad("prop", name))
		if len(sealed) > MaxBinaryBytes {
			return nil, inputErr("encrypt", t.plan.typ.String(), name, ErrBinaryTooLong, "encrypted and padded, the value is %d bytes; at most %d", len(sealed), MaxBinaryBytes)
		}
		m[name], _ = json.Marshal(sealed)
		m[name+"@odata.type"] = json.RawMessage(`"Edm.Binary"`)
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	env.Tag = aead.Seal(nonce, nonce, nil, b.aad("list", ""))
	wrapped, err := t.enc.Keys.WrapKey(ctx, t.enc.KeyID, cek)
	if err != nil {
		return nil, redact.Error(fmt.Errorf("table: wrap the content key with %q: %w", t.enc.KeyID, err))
	}
	env.Key = wrapped
	ej, _ := json.Marshal(env)
	m[encryptionProperty], _ = json.Marshal(string(ej))
	out, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(out) > MaxEntityBytes {
		return nil, inputErr("encrypt", t.plan.typ.String(), "", ErrEntityTooLarge, "encrypted, the entity is %d bytes; at most %d", len(out), MaxEntityBytes)
	}
	return out, nil
}

// decrypt turns an encrypted entity as the service returns it back into
// the plaintext entity the plan decodes. full: the entity was read whole,
// so every listed property must be there; a query's $select may leave some
// out (the envelope is always selected with them).
func (t *Table[T]) decrypt(ctx context.Context, data []byte, full bool) ([]byte, error) {
	tableName := t.boundTable()
	if tableName == "" {
		return nil, inputErr("decrypt", t.plan.typ.String(), "", ErrBadOption, "set Encryption.Table: the client does not say which table it addresses, and ciphertexts are bound to it")
	}
	m, pk, rk, err := splitEntity(data)
	if err != nil {
		return nil, err
	}
	fail := func(prop string, cause error, format string, args ...any) error {
		return &IntegrityError{Type: t.plan.typ.String(), Table: tableName, PartitionKey: pk, RowKey: rk, Property: prop, Reason: fmt.Sprintf(format, args...), Err: cause}
	}
	raw, ok := m[encryptionProperty]
	if !ok {
		// Every write of an encrypted type stores the envelope, and every
		// query selects it: without it the entity was not written whole
		// by this type, or the envelope was deleted (perhaps with every
		// encrypted property, which would otherwise read as zero values).
		return nil, fail(encryptionProperty, nil, "the encryption envelope is missing")
	}
	var ej string
	var env envelope
	if json.Unmarshal(raw, &ej) != nil || json.Unmarshal([]byte(ej), &env) != nil {
		return nil, fail(encryptionProperty, nil, "the encryption envelope is unreadable")
	}
	if env.V != encryptionVersion {
		return nil, fail(encryptionProperty, nil, "envelope version %d; this version reads %d", env.V, encryptionVersion)
	}
	cek, err := t.enc.Keys.UnwrapKey(ctx, env.KeyID, env.Key)
	if err != nil || len(cek) != 32 {
		return nil, fail(encryptionProperty, err, "the content key does not unwrap with key %q", env.KeyID)
	}
	aead, _ := newAEAD(cek)
	b := &binding{table: tableName, pk: pk, rk: rk, keyID: env.KeyID, props: env.Props}
	ns := aead.NonceSize()
	if len(env.Tag) < ns || func() error {
		_, err := aead.Open(nil, env.Tag[:ns], env.Tag[ns:], b.aad("list", ""))
		return err
	}() != nil {
		return nil, fail(encryptionProperty, nil, "the list of encrypted properties does not authenticate for this table and entity")
	}
	delete(m, encryptionProperty)
	for _, name := range t.plan.encrypted {
		if _, present := m[name]; present && !slices.Contains(env.Props, name) {
			return nil, fail(name, nil, "an encrypted property is stored outside the authenticated list")
		}
	}
	for _, name := range env.Props {
		v, present := m[name]
		if !present {
			if !full {
				continue // a query's $select left it out
			}
			return nil, fail(name, nil, "a listed encrypted property is missing")
		}
		var sealed []byte
		if json.Unmarshal(v, &sealed) != nil || len(sealed) < ns {
			return nil, fail(name, nil, "not ciphertext")
		}
		plain, err := aead.Open(nil, sealed[:ns], sealed[ns:], b.aad("prop", name))
		if err != nil {
			return nil, fail(name, nil, "the ciphertext does not authenticate for this table, entity and property")
		}
		delete(m, name+"@odata.type")
		var frag map[string]json.RawMessage
		if json.Unmarshal(plain, &frag) != nil {
			return nil, fail(name, nil, "decrypts to garbage")
		}
		for k, fv := range frag {
			if k != name && k != name+"@odata.type" {
				return nil, fail(name, nil, "decrypts to another property")
			}
			m[k] = fv
		}
	}
	return json.Marshal(m)
}

// refuseEncryptedFilter refuses a filter that compares an encrypted
// property: the service sees only ciphertext, so no row would match.
func (t *Table[T]) refuseEncryptedFilter(f Filter) error {
	if t.enc == nil || f.n == nil {
		return nil
	}
	var bad string
	var walk func(n *fnode)
	walk = func(n *fnode) {
		if n == nil || bad != "" {
			return
		}
		if n.prop != "" && slices.Contains(t.plan.encrypted, n.prop) {
			bad = n.prop
			return
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(f.n)
	if bad == "" {
		return nil
	}
	return inputErr("Query", t.plan.typ.String(), bad, ErrEncryptedFilter, "%s is stored as ciphertext, which no literal matches; filter on a plaintext property, or read and compare in the process", bad)
}

func (p *plan) hasEncrypted() bool { return len(p.encrypted) > 0 }

// refuseEncrypted is the error of plaintext paths on encrypted types.
func refuseEncrypted(op string, p *plan) error {
	return inputErr(op, p.typ.String(), strings.Join(p.encrypted, ","), ErrEncryptedType,
		"these fields are encrypted; read and write them through a Table with Options.Encryption")
}
