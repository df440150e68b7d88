// Package store holds the emulated cloud's state: one part per product,
// guarded by one lock, optionally persisted to a bbolt file so that the
// emulator keeps its cloud across restarts.
package store

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Part is one product's state. It must round-trip through encoding/json.
type Part interface {
	// Reset empties the part, as on a fresh account.
	Reset()
}

// Store is the emulated cloud's state. Handlers run under Lock (mutations)
// or RLock (reads), taken by the gateway, so product code never locks.
type Store struct {
	mu       sync.RWMutex
	parts    map[string]Part
	order    []string
	db       *bolt.DB
	settings *Settings
}

var bucket = []byte("parts")

// New returns an in-memory store.
func New() *Store {
	return &Store{parts: map[string]Part{}, settings: NewSettings()}
}

// Open returns a store persisted in the bbolt file at path; state saved
// there is loaded when parts register.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open state file %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("init state file %s: %w", path, err)
	}
	s := New()
	s.db = db
	return s, nil
}

// Close releases the state file.
func (s *Store) Close() error {
	if s.db == nil {
		return nil
	}
	return s.db.Close()
}

// Settings returns the tunables (delays, quotas) shared by all products.
func (s *Store) Settings() *Settings { return s.settings }

// Register adds a product's state part under name, loading its saved state
// when the store is persistent.
func (s *Store) Register(name string, p Part) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.parts[name]; dup {
		return fmt.Errorf("state part %q registered twice", name)
	}
	p.Reset()
	s.parts[name] = p
	s.order = append(s.order, name)
	if s.db == nil {
		return nil
	}
	return s.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucket).Get([]byte(name))
		if data == nil {
			return nil
		}
		if err := json.Unmarshal(data, p); err != nil {
			return fmt.Errorf("load state part %q: %w", name, err)
		}
		return nil
	})
}

// Lock takes the write lock for a mutation.
func (s *Store) Lock() { s.mu.Lock() }

// Unlock releases the write lock.
func (s *Store) Unlock() { s.mu.Unlock() }

// RLock takes the read lock.
func (s *Store) RLock() { s.mu.RLock() }

// RUnlock releases the read lock.
func (s *Store) RUnlock() { s.mu.RUnlock() }

// SaveLocked persists every part; the caller holds the write lock. It is a
// no-op for an in-memory store.
func (s *Store) SaveLocked() error {
	if s.db == nil {
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for _, name := range s.order {
			data, err := json.Marshal(s.parts[name])
			if err != nil {
				return fmt.Errorf("encode state part %q: %w", name, err)
			}
			if err := b.Put([]byte(name), data); err != nil {
				return fmt.Errorf("save state part %q: %w", name, err)
			}
		}
		return nil
	})
}

// Reset empties every part and persists the empty state.
func (s *Store) Reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range s.order {
		s.parts[name].Reset()
	}
	return s.SaveLocked()
}

// Dump returns every part as JSON, keyed by part name.
func (s *Store) Dump() (map[string]json.RawMessage, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]json.RawMessage{}
	for _, name := range s.order {
		data, err := json.Marshal(s.parts[name])
		if err != nil {
			return nil, fmt.Errorf("encode state part %q: %w", name, err)
		}
		out[name] = data
	}
	return out, nil
}

// Restore replaces the parts present in dump (others are reset) and persists.
func (s *Store) Restore(dump map[string]json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range dump {
		if _, ok := s.parts[name]; !ok {
			return fmt.Errorf("restore: unknown state part %q", name)
		}
	}
	for _, name := range s.order {
		p := s.parts[name]
		p.Reset()
		if data, ok := dump[name]; ok {
			if err := json.Unmarshal(data, p); err != nil {
				return fmt.Errorf("restore state part %q: %w", name, err)
			}
		}
	}
	return s.SaveLocked()
}

// PartNames lists the registered parts in registration order.
func (s *Store) PartNames() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := append([]string(nil), s.order...)
	return out
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// NewID returns a resource id in the cloud's format: prefix, a dash, a
// region-like "bp1" and 18 random lower-case alphanumerics (e.g.
// lb-bp1o94dp5i6earr9g6d1l).
func NewID(prefix string) string {
	return prefix + "-bp1" + RandomString(18)
}

// RandomString returns n random characters of [a-z0-9].
func RandomString(n int) string {
	b := make([]byte, n)
	max := big.NewInt(int64(len(idAlphabet)))
	for i := range b {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(err)
		}
		b[i] = idAlphabet[v.Int64()]
	}
	return string(b)
}

// SortedKeys returns the keys of m in order, for deterministic listings.
func SortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
