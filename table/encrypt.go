package table

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Client-side encryption ("Encrypting table data" in the guide): fields
// tagged `table:",encrypt"` leave the process as Edm.Binary ciphertext.
// Each write draws a fresh 256-bit content key; every encrypted property is
// sealed with AES-256-GCM under it, bound to the entity's keys and the
// property's name, and the content key travels wrapped by a key-encryption
// key the caller's KeyWrapper holds, in the EncryptionProperty.

// EncryptionProperty is the property that carries an encrypted entity's
// wrapped content key and the names of its encrypted properties.
const EncryptionProperty = "TkEncryption"

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
}

// Errors of encryption, matched with errors.Is.
var (
	// ErrEncryptedType: the operation would carry an encrypted type's
	// fields in plaintext (Codec, Encode, EncodeOnly, Decode, Registry,
	// batch operations); use the Table's I/O methods.
	ErrEncryptedType = errors.New("type has encrypted fields")
	// ErrMergeEncrypted: a merge of an entity with encrypted properties;
	// the stored properties would keep a content key the write replaces,
	// so such entities are written with Replace only.
	ErrMergeEncrypted = errors.New("merge of an entity with encrypted properties")
	// ErrDecrypt: an encrypted entity could not be opened: the key is
	// wrong or unknown, or the stored data was tampered with.
	ErrDecrypt = errors.New("cannot decrypt")
)

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

// envelope is the EncryptionProperty's value.
type envelope struct {
	V     int      `json:"v"`
	KeyID string   `json:"kid"`
	Key   []byte   `json:"key"` // the wrapped content key
	Props []string `json:"p"`
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

// sealAAD binds a ciphertext to its entity and property, so it cannot be
// moved to another entity or property unnoticed.
func sealAAD(pk, rk, name string) []byte {
	return []byte("tablekit/v1\x00" + pk + "\x00" + rk + "\x00" + name)
}

// encrypt replaces the encrypted properties of body (as the plan encodes
// it) with ciphertext and adds the EncryptionProperty.
func (t *Table[T]) encrypt(ctx context.Context, body []byte) ([]byte, error) {
	m, pk, rk, err := splitEntity(body)
	if err != nil {
		return nil, err
	}
	cek := make([]byte, 32)
	_, _ = rand.Read(cek)
	block, _ := aes.NewCipher(cek)
	aead, _ := cipher.NewGCM(block)
	env := envelope{V: 1, KeyID: t.enc.KeyID}
	for _, name := range t.plan.encrypted {
		v, ok := m[name]
		if !ok {
			continue // omitted (omitempty, nil pointer): nothing to hide
		}
		frag := map[string]json.RawMessage{name: v}
		if a, ok := m[name+"@odata.type"]; ok {
			frag[name+"@odata.type"] = a
		}
		plain, _ := json.Marshal(frag)
		nonce := make([]byte, aead.NonceSize())
		_, _ = rand.Read(nonce)
		sealed := aead.Seal(nonce, nonce, plain, sealAAD(pk, rk, name))
		if len(sealed) > MaxBinaryBytes {
			return nil, inputErr("encrypt", t.plan.typ.String(), name, ErrBinaryTooLong, "encrypted, the value is %d bytes; at most %d", len(sealed), MaxBinaryBytes)
		}
		m[name], _ = json.Marshal(sealed)
		m[name+"@odata.type"] = json.RawMessage(`"Edm.Binary"`)
		env.Props = append(env.Props, name)
	}
	wrapped, err := t.enc.Keys.WrapKey(ctx, t.enc.KeyID, cek)
	if err != nil {
		return nil, fmt.Errorf("table: wrap the content key with %q: %w", t.enc.KeyID, err)
	}
	env.Key = wrapped
	ej, _ := json.Marshal(env)
	m[EncryptionProperty], _ = json.Marshal(string(ej))
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
// the plaintext entity the plan decodes.
func (t *Table[T]) decrypt(ctx context.Context, data []byte, full bool) ([]byte, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("table: %s: %w: %s", t.plan.typ, ErrDecrypt, fmt.Sprintf(format, args...))
	}
	m, pk, rk, err := splitEntity(data)
	if err != nil {
		return nil, err
	}
	raw, ok := m[EncryptionProperty]
	if !ok {
		for _, name := range t.plan.encrypted {
			if _, present := m[name]; present {
				return nil, fail("%s/%s holds %s unencrypted", pk, rk, name)
			}
		}
		return data, nil // selected without its encrypted properties
	}
	var ej string
	var env envelope
	if json.Unmarshal(raw, &ej) != nil || json.Unmarshal([]byte(ej), &env) != nil || env.V != 1 {
		return nil, fail("%s/%s: unreadable %s", pk, rk, EncryptionProperty)
	}
	cek, err := t.enc.Keys.UnwrapKey(ctx, env.KeyID, env.Key)
	if err != nil || len(cek) != 32 {
		return nil, fail("%s/%s: unwrap the content key with %q: %v", pk, rk, env.KeyID, err)
	}
	block, _ := aes.NewCipher(cek)
	aead, _ := cipher.NewGCM(block)
	delete(m, EncryptionProperty)
	for _, name := range t.plan.encrypted {
		v, present := m[name]
		listed := slices.Contains(env.Props, name)
		switch {
		case !present && !listed:
			continue
		case !present:
			if !full {
				continue // a query's $select left it out
			}
			return nil, fail("%s/%s: encrypted %s is missing", pk, rk, name)
		case !listed:
			return nil, fail("%s/%s holds %s unencrypted", pk, rk, name)
		}
		var sealed []byte
		if json.Unmarshal(v, &sealed) != nil || len(sealed) < aead.NonceSize() {
			return nil, fail("%s/%s: %s is not ciphertext", pk, rk, name)
		}
		plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], sealAAD(pk, rk, name))
		if err != nil {
			return nil, fail("%s/%s: %s does not authenticate", pk, rk, name)
		}
		delete(m, name+"@odata.type")
		var frag map[string]json.RawMessage
		if json.Unmarshal(plain, &frag) != nil {
			return nil, fail("%s/%s: %s decrypts to garbage", pk, rk, name)
		}
		for k, fv := range frag {
			if k != name && k != name+"@odata.type" {
				return nil, fail("%s/%s: %s decrypts to another property", pk, rk, name)
			}
			m[k] = fv
		}
	}
	return json.Marshal(m)
}

func (p *plan) hasEncrypted() bool { return len(p.encrypted) > 0 }

// refuseEncrypted is the error of plaintext paths on encrypted types.
func refuseEncrypted(op string, p *plan) error {
	return inputErr(op, p.typ.String(), strings.Join(p.encrypted, ","), ErrEncryptedType,
		"these fields are encrypted; read and write them through a Table with Options.Encryption")
}
