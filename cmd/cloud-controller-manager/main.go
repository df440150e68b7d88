// Command cloud-controller-manager is the Alibaba Cloud cloud controller
// manager: node initialization and lifecycle, VPC routes and LoadBalancer
// Services on CLB and NLB.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "cloud-controller-manager: not built yet (see issue 4)")
	os.Exit(1)
}
