package cloud_test

import (
	"reflect"
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/cloud"
)

func TestChunk(t *testing.T) {
	for _, tc := range []struct{ n, size, want []int }{
		{n: []int{0}, size: []int{50}, want: nil},
		{n: []int{1}, size: []int{50}, want: []int{1}},
		{n: []int{50}, size: []int{50}, want: []int{50}},
		{n: []int{51}, size: []int{50}, want: []int{50, 1}},
		{n: []int{120}, size: []int{50}, want: []int{50, 50, 20}},
		{n: []int{7}, size: []int{3}, want: []int{3, 3, 1}},
	} {
		items := make([]int, tc.n[0])
		var got []int
		for _, b := range cloud.Chunks(items, tc.size[0]) {
			got = append(got, len(b))
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("chunk(%d, %d) = %v, want %v", tc.n[0], tc.size[0], got, tc.want)
		}
	}
}
