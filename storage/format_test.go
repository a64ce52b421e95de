package storage

import (
	"errors"
	"strings"
	"testing"
)

func TestNewerFormatError(t *testing.T) {
	tests := []struct {
		name    string
		by      string
		want    []string
		wantNot []string
	}{
		{"release", "v1.4.0", []string{"index x has format version 2, written by sessionmem v1.4.0; this sessionmem (", ") reads up to 1: upgrade sessionmem to v1.4.0 or later"}, nil},
		{"not recorded", "", []string{"index x has format version 2; this sessionmem (", "reads up to 1: upgrade sessionmem"}, []string{"written by", " or later"}},
		{"development build", "dev-4da2f38b2bf9+dirty", []string{"written by sessionmem dev-4da2f38b2bf9+dirty", "upgrade sessionmem"}, []string{" or later"}},
		{"junk is not quoted", "v1\n\x1b[31mred", []string{"upgrade sessionmem"}, []string{"written by", "red"}},
		{"too long", "v" + strings.Repeat("1", 80), []string{"upgrade sessionmem"}, []string{"written by"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error = &NewerFormatError{What: "index x", Version: 2, Newest: 1, WrittenBy: tt.by}
			if !errors.Is(err, ErrNewerFormat) {
				t.Fatal("does not wrap ErrNewerFormat")
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(msg, w) {
					t.Errorf("%q has %q", msg, w)
				}
			}
		})
	}
}
