// Command sandbox runs a whole local cluster on loopback (control plane,
// kwok nodes, the emulated cloud and the CCM).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "sandbox: not built yet (see issue 6)")
	os.Exit(1)
}
