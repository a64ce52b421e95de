package memory

import (
	"math/rand/v2"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sessionmem/sessionmem/internal/jsonscan/jsontest"
)

// objectMember finds the same member gjson finds, in valid objects of every shape (white space,
// escapes, nesting, keys in any order, the sought key anywhere or absent), and never a wrong
// one in damaged text.
func TestObjectMember(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 25))
	keys := []string{`"message"`, `"type"`, `"seq"`, `"id"`, `"messages"`, `"m\"essage"`}
	key := func(r *rand.Rand) string {
		if r.IntN(3) == 0 {
			return jsontest.InputString(r)
		}
		return jsontest.Pick(r, keys...)
	}
	for i := range 20000 {
		var members []string
		for range rng.IntN(6) {
			members = append(members, key(rng)+":"+jsontest.Value(rng, 1, jsontest.InputString))
		}
		obj := jsontest.Object(rng, members)
		if i%5 == 4 {
			obj = jsontest.Damage(rng, obj)
		}
		got, ok := objectMember([]byte(obj), "message")
		if !gjson.Valid(obj) {
			continue // damaged: any answer but a crash will do (stored records are valid)
		}
		// gjson keeps the first of repeated keys, as objectMember does.
		want := gjson.Get(obj, "message")
		if want.Exists() != ok || ok && string(got) != want.Raw {
			t.Fatalf("%s: objectMember = %q, %v; gjson %q, %v", obj, got, ok, want.Raw, want.Exists())
		}
	}
}
