package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/sessionmem/sessionmem/storage"
)

// The gate is the one place every string passes on its way to disk. Every entry is walked by
// reflection right before it is encoded (commit), and a session's header and first metadata
// right before the store creates it (create), so a field added to any record type later is
// redacted without anyone remembering to: the walk visits every string, []string,
// json.RawMessage (its strings and keys) and nested struct, and TestGateEveryField plants every
// kind of secret in every field it finds. What the store holds is what the index, exports,
// the search index and other backends are fed from, so gating here covers them too.
//
// Fields fall in three classes, chosen by a `gate` struct tag or, for storage's types, by
// gatePolicies:
//   - text (the default): redacted; a secret becomes "[REDACTED:kind]".
//   - id (`gate:"id"`): an identifier that other records and later calls refer to (message,
//     entry and tool-call ids, idempotency keys). Redacting it in place would let two ids
//     collide and break the links between records, so an id the redactor would change is
//     replaced whole by "redacted-" and a hash of it salted with the session's id and nonce:
//     the same id always maps to the same stand-in within a session, and the stand-in says
//     nothing of the secret. Lookups (idempotent saves, parent_id, from_id) map their input
//     the same way, so retries and links keep working.
//   - session (`gate:"session"`): a session id, which names the session's files and rows. A
//     session id the redactor would change is refused, never stored.
//
// working_dir is text: it is redacted like a name, because sessionmem never opens it (it is
// matched against the working_dir of later calls and used to make tool-call paths relative),
// and both of those pass the same gate, so a project whose path held a secret still finds its
// sessions; its paths simply show the marker.

// Gate classes.
const (
	gateText = iota
	gateID
	gateSession
)

// gatePolicies gives the classes of fields of types whose declarations are not memory's.
var gatePolicies = map[reflect.Type]map[string]int{
	reflect.TypeFor[storage.Header](): {"ID": gateSession, "ParentSession": gateSession},
	reflect.TypeFor[storage.Meta]():   {"ID": gateSession, "ParentSession": gateSession, "Leaf": gateID},
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	timeType       = reflect.TypeFor[time.Time]()
)

// RedactText returns x as the gate would store it: redacted with the configured rules. Other
// packages use it for what they write or print outside the store (import state, error
// messages, command output).
func (s *Service) RedactText(x string) string { return s.redact(x) }

// Gate redacts, in place, every string field of the struct v points to, with the classes of
// the gate (`gate:"id"` fields are replaced by a stable stand-in). It is for state other
// packages keep beside the store (transcript's import checkpoints).
func (s *Service) Gate(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("memory: Gate needs a non-nil pointer, got %T", v)
	}
	out, changed, err := s.walk("", rv.Elem(), gateText)
	if err != nil {
		return err
	}
	if changed {
		rv.Elem().Set(out)
	}
	return nil
}

// gateSalt is what id stand-ins of a session are salted with.
func gateSalt(h storage.Header) string { return h.ID + "\x00" + h.Nonce }

// gateID maps an id the way the gate stores it (see the classes above).
func (s *Service) gateID(salt, id string) string {
	if id == "" || s.opts.Redact == nil || s.redact(id) == id {
		return id
	}
	sum := sha256.Sum256([]byte(salt + "\x00" + id))
	return "redacted-" + hex.EncodeToString(sum[:12])
}

// gateEntry returns e as it may be stored. e itself and what it points to are not modified.
func (s *Service) gateEntry(h storage.Header, e Entry) (Entry, error) {
	if s.opts.Redact == nil {
		return e, nil
	}
	out, changed, err := s.walk(gateSalt(h), reflect.ValueOf(e), gateText)
	if err != nil || !changed {
		return e, err
	}
	return out.Interface().(Entry), nil
}

// gateMessage returns m as it may be stored in the session salt belongs to, without its entry
// id (the entry carries it).
func (s *Service) gateMessage(salt string, m Message) (Message, error) {
	m.EntryID = ""
	if s.opts.Redact == nil {
		return m, nil
	}
	out, changed, err := s.walk(salt, reflect.ValueOf(m), gateText)
	if err != nil || !changed {
		return m, err
	}
	return out.Interface().(Message), nil
}

// gateMeta returns m as it may be stored.
func (s *Service) gateMeta(salt string, m storage.Meta) (storage.Meta, error) {
	if s.opts.Redact == nil {
		return m, nil
	}
	out, changed, err := s.walk(salt, reflect.ValueOf(m), gateText)
	if err != nil || !changed {
		return m, err
	}
	return out.Interface().(storage.Meta), nil
}

// create gates a new session's header and first metadata, then creates it.
func (s *Service) create(ctx context.Context, h storage.Header, m storage.Meta) error {
	if s.opts.Redact != nil {
		out, changed, err := s.walk("", reflect.ValueOf(h), gateText)
		if err != nil {
			return err
		}
		if changed {
			h = out.Interface().(storage.Header)
		}
		if m, err = s.gateMeta("", m); err != nil {
			return err
		}
	}
	return s.store.Create(ctx, h, m)
}

// gateField is one field the gate walks, and its class.
type gateField struct {
	index, class int
}

// fieldCache holds each struct type's gateFields (reading tags on every walk cost more than
// the redaction of a turn).
var fieldCache sync.Map // reflect.Type → []gateField or error

// gateFields returns the fields of struct type t the gate walks (all but json:"-"), with their
// classes; an unexported field is an error (the gate could not read it) unless it is a
// number or a bool.
func gateFields(t reflect.Type) ([]gateField, error) {
	if c, ok := fieldCache.Load(t); ok {
		if err, bad := c.(error); bad {
			return nil, err
		}
		return c.([]gateField), nil
	}
	var out []gateField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && holdsNoText(f.Type) {
			continue // bookkeeping such as Block.absent: no string can hide in it
		}
		if !f.IsExported() {
			err := fmt.Errorf("memory: the gate cannot read %s.%s (unexported)", t, f.Name)
			fieldCache.Store(t, err)
			return nil, err
		}
		if f.Tag.Get("json") == "-" {
			continue // never encoded
		}
		c := gateText
		switch f.Tag.Get("gate") {
		case "id":
			c = gateID
		case "session":
			c = gateSession
		}
		if p, ok := gatePolicies[t][f.Name]; ok {
			c = p
		}
		out = append(out, gateField{index: i, class: c})
	}
	fieldCache.Store(t, out)
	return out, nil
}

// holdsNoText reports whether a value of type t cannot contain a string (a number or a bool).
func holdsNoText(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// walk returns v with every string gated, and whether anything changed. A changed value is a
// copy: slices, pointers and structs on the way to a change are copied, never written to.
func (s *Service) walk(salt string, v reflect.Value, class int) (reflect.Value, bool, error) {
	switch v.Kind() {
	case reflect.String:
		return s.walkString(salt, v, class)
	case reflect.Slice:
		return s.walkSlice(salt, v, class)
	case reflect.Pointer:
		if v.IsNil() {
			return v, false, nil
		}
		ev, changed, err := s.walk(salt, v.Elem(), class)
		if err != nil || !changed {
			return v, false, err
		}
		np := reflect.New(v.Type().Elem())
		np.Elem().Set(ev)
		return np, true, nil
	case reflect.Struct:
		return s.walkStruct(salt, v)
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return v, false, nil
	}
	// Maps, interfaces, funcs: no stored record has them; one added later must be taught to
	// the gate (TestGateEveryField fails until it is).
	return v, false, fmt.Errorf("memory: the gate cannot read a %s", v.Type())
}

// walkString gates one string as its class says.
func (s *Service) walkString(salt string, v reflect.Value, class int) (reflect.Value, bool, error) {
	in := v.String()
	var out string
	switch class {
	case gateID:
		out = s.gateID(salt, in)
	case gateSession:
		if in != "" && s.redact(in) != in {
			return v, false, invalidf("use a session id that carries no secret", "session id %q looks like it holds a secret", s.redact(in))
		}
		return v, false, nil
	default:
		out = s.redact(in)
	}
	if out == in {
		return v, false, nil
	}
	nv := reflect.New(v.Type()).Elem()
	nv.SetString(out)
	return nv, true, nil
}

// walkSlice gates a slice's elements (a json.RawMessage as JSON).
func (s *Service) walkSlice(salt string, v reflect.Value, class int) (reflect.Value, bool, error) {
	if v.IsNil() {
		return v, false, nil
	}
	if v.Type() == rawMessageType {
		raw := json.RawMessage(v.Bytes())
		out := s.redactJSON(raw)
		if string(out) == string(raw) {
			return v, false, nil
		}
		return reflect.ValueOf(out), true, nil
	}
	if v.Type().Elem().Kind() == reflect.Uint8 {
		return v, false, fmt.Errorf("memory: the gate cannot read %s (bytes of unknown meaning)", v.Type())
	}
	var nv reflect.Value
	for i := range v.Len() {
		ev, changed, err := s.walk(salt, v.Index(i), class)
		if err != nil {
			return v, false, err
		}
		if changed {
			if !nv.IsValid() {
				nv = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
				reflect.Copy(nv, v)
			}
			nv.Index(i).Set(ev)
		}
	}
	if nv.IsValid() {
		return nv, true, nil
	}
	return v, false, nil
}

// walkStruct gates a struct's fields, each as its gate tag says.
func (s *Service) walkStruct(salt string, v reflect.Value) (reflect.Value, bool, error) {
	t := v.Type()
	if t == timeType {
		return v, false, nil
	}
	fields, err := gateFields(t)
	if err != nil {
		return v, false, err
	}
	var nv reflect.Value
	for _, f := range fields {
		fv, changed, err := s.walk(salt, v.Field(f.index), f.class)
		if err != nil {
			return v, false, err
		}
		if changed {
			if !nv.IsValid() {
				nv = reflect.New(t).Elem()
				nv.Set(v)
			}
			nv.Field(f.index).Set(fv)
		}
	}
	if nv.IsValid() {
		return nv, true, nil
	}
	return v, false, nil
}
