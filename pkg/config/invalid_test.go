package config

import (
	"errors"
	"testing"
)

func TestInvalid(t *testing.T) {
	a, b := errors.New("--a: bad"), errors.New("--b: bad")
	tests := []struct {
		name  string
		where string
		errs  []error
		want  string // "" means nil
	}{
		{"none", "", nil, ""},
		{"one", "", []error{a}, "invalid configuration (1 problem):\n--a: bad"},
		{"two, qualified", " on this host", []error{a, b}, "invalid configuration (2 problems on this host):\n--a: bad\n--b: bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Invalid(tt.where, tt.errs)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Invalid() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Invalid() = %q, want %q", err, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not wrap ErrInvalid", err)
			}
			for _, e := range tt.errs {
				if !errors.Is(err, e) {
					t.Errorf("%v does not wrap %v", err, e)
				}
			}
		})
	}
}
