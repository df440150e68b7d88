// Command cloud-controller-manager is the Alibaba Cloud cloud controller
// manager: node initialization and lifecycle, VPC routes and LoadBalancer
// Services on CLB and NLB.
package main

import "github.com/alicloud-ccm/alicloud-ccm/internal/ccm/app"

func main() { app.Main() }
