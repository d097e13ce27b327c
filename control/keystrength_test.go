package control

import (
	"strings"
	"testing"
)

func TestKeyBits(t *testing.T) {
	for _, c := range []struct {
		key  string
		weak bool
	}{
		{"golden-shared-key-0123", false}, // 22 characters of three classes
		{"password", true},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true},
		{"Xk3#pQ9!vL2@mN7$", false},
		{"0123456789012345678901", false},
	} {
		if weak := KeyBits([]byte(c.key)) < MinKeyBits; weak != c.weak {
			t.Errorf("%q: %d bits, weak %v, want %v", c.key, KeyBits([]byte(c.key)), weak, c.weak)
		}
	}
}

func TestWeakKeys(t *testing.T) {
	f, err := ParseKeyFile(strings.NewReader("1,short\n2,Xk3%pQ9!vL2@mN7$aa\n"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewServerKeys("hunter2", f)
	if err != nil {
		t.Fatal(err)
	}
	got := k.WeakKeys()
	if len(got) != 2 || got[0] != "the -a key" || got[1] != "key id 1" {
		t.Errorf("WeakKeys() = %q", got)
	}
}
