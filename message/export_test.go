package message

import (
	"fmt"
	"reflect"
)

// DecodeInputBoth decodes raw with the one-pass decoder and with the general one and
// describes how they differ ("" when they agree: the one-pass decoder declined, or both gave
// the same Message, unexported fields included). fast reports that the one-pass decoder read
// it.
func DecodeInputBoth(raw []byte) (fast bool, diff string) {
	got, ok := decodeInputFast(raw)
	want, err := decodeInputGeneral(raw)
	switch {
	case !ok:
		return false, ""
	case err != nil:
		return true, fmt.Sprintf("one pass decoded %+v, the general decoder failed: %v", got, err)
	case !reflect.DeepEqual(got, want):
		return true, fmt.Sprintf("one pass decoded\n%#v\nthe general decoder\n%#v", got, want)
	}
	return true, ""
}
