package emulator_test

import (
	"testing"

	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/gateway"
	"github.com/alicloud-ccm/alicloud-ccm/internal/emulator/store"
)

// TestTimingModes: the cloud's timing by default, zero on request (config
// or settings), kept across a reset, and an unknown mode refused.
func TestTimingModes(t *testing.T) {
	def, err := emulator.New(emulator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	if got := def.Gateway.Settings(); got.Timing != store.TimingCloud || got.Delays[store.DelayNLBJob] == 0 || got.Delays[store.DelayNLBProvisioning] == 0 {
		t.Fatalf("default settings %+v, want the cloud's timing", got)
	}
	zero, err := emulator.New(emulator.Config{Timing: store.TimingZero})
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	check := func(e *emulator.Emulator, want string) {
		t.Helper()
		got := e.Gateway.Settings()
		if got.Timing != want {
			t.Fatalf("timing %q, want %q (%v)", got.Timing, want, got.Delays)
		}
		for name, d := range got.Delays {
			if (want == store.TimingZero) != (d == 0) && name != store.DelaySLBConfiguring {
				t.Fatalf("timing %s: delay %s = %v", want, name, d)
			}
		}
	}
	check(zero, store.TimingZero)
	if err := zero.Gateway.Reset(); err != nil {
		t.Fatal(err)
	}
	check(zero, store.TimingZero)
	if err := zero.Gateway.UpdateSettings(gateway.SettingsDoc{Timing: store.TimingCloud}); err != nil {
		t.Fatal(err)
	}
	check(zero, store.TimingCloud)
	if err := zero.Gateway.UpdateSettings(gateway.SettingsDoc{Timing: "fast"}); err == nil {
		t.Fatal("timing fast was accepted")
	}
	if err := zero.Gateway.UpdateSettings(gateway.SettingsDoc{Delays: map[string]gateway.Duration{store.DelayNLBJob: 1}}); err != nil {
		t.Fatal(err)
	}
	check(zero, store.TimingCustom)
	if _, err := emulator.New(emulator.Config{Timing: "fast"}); err == nil {
		t.Fatal("Config.Timing fast was accepted")
	}
}
