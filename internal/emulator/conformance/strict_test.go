package conformance

import (
	"reflect"
	"strings"
	"testing"
)

type embedded struct {
	hidden string //nolint:unused // an unexported field the checker must not offer
}

type item struct {
	ID   string `json:"Id"`
	Port int    `json:"Port,omitempty"`
}

type model struct {
	*embedded
	RequestId string            `json:"RequestId"`
	On        bool              `json:"On"`
	Ratio     float64           `json:"Ratio"`
	Count     *int64            `json:"Count"`
	Items     []item            `json:"Items"`
	Wrapped   struct{ X []int } `json:"Wrapped"`
	Free      map[string]string `json:"Free"`
	Any       any               `json:"Any"`
}

// TestCheck shows that each kind of difference is found and that a
// conforming response has none.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   string
		fields int
		want   []string
	}{
		{"conforming", `{"RequestId":"r","On":true,"Ratio":0.5,"Count":3,"Items":[{"Id":"a","Port":80}],"Wrapped":{"X":[1,2]},"Free":{"k":"v"},"Any":[1]}`, 12, nil},
		{"unknown field", `{"RequestId":"r","Extra":1}`, 2, []string{"Extra: not in the model (model)"}},
		{"case differs", `{"requestId":"r"}`, 1, []string{"requestId: not in the model (model)"}},
		{"bool as string", `{"On":"false"}`, 1, []string{"On: string where the model has bool"}},
		{"number as string", `{"Count":"3"}`, 1, []string{"Count: string where the model has integer"}},
		{"fraction in integer", `{"Count":1.5}`, 1, []string{"Count: non-integer number 1.5 where the model has integer"}},
		{"string as number", `{"RequestId":7}`, 1, []string{"RequestId: number where the model has string"}},
		{"array where object", `{"Wrapped":[1]}`, 1, []string{"Wrapped: array where the model has object"}},
		{"object where array", `{"Items":{"Item":[]}}`, 1, []string{"Items: object where the model has array"}},
		{"null", `{"Items":null}`, 1, []string{"Items: null where the model has array"}},
		{"nested, reported once", `{"Items":[{"Id":1},{"Id":2},{"Name":"x"}]}`, 4, []string{"Items[].Id: number where the model has string", "Items[].Name: not in the model (item)"}},
		{"map values typed", `{"Free":{"k":1}}`, 2, []string{"Free.k: number where the model has string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Check([]byte(tc.body), reflect.TypeOf(&model{}))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range res.Mismatches {
				got = append(got, m.String())
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("mismatches %q, want %q", got, tc.want)
			}
			if res.Fields != tc.fields {
				t.Errorf("fields %d, want %d", res.Fields, tc.fields)
			}
		})
	}
	if _, err := Check([]byte(`{`), reflect.TypeOf(model{})); err == nil {
		t.Error("truncated JSON accepted")
	}
}
