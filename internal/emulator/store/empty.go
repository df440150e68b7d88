package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// IsEmpty reports whether every part is in its freshly reset state, by
// comparing each part's JSON with that of a new value of the same type after
// Reset. The emulator applies --seed only to an empty state, so that a
// restart with --state keeps what the previous run built.
func (s *Store) IsEmpty() (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, name := range s.order {
		p := s.parts[name]
		cur, err := json.Marshal(p)
		if err != nil {
			return false, fmt.Errorf("encode state part %q: %w", name, err)
		}
		t := reflect.TypeOf(p)
		var fresh Part
		if t.Kind() == reflect.Pointer {
			fresh, _ = reflect.New(t.Elem()).Interface().(Part)
		}
		if fresh == nil {
			return false, fmt.Errorf("state part %q is not a pointer to a struct", name)
		}
		fresh.Reset()
		empty, err := json.Marshal(fresh)
		if err != nil {
			return false, fmt.Errorf("encode empty state part %q: %w", name, err)
		}
		if !bytes.Equal(cur, empty) {
			return false, nil
		}
	}
	return true, nil
}
