package api

// DefaultResourceGroupID is the account's default resource group: every
// product files a resource created without ResourceGroupId under it and
// reports it in its Describe/List responses.
const DefaultResourceGroupID = "rg-acfmemulatordefault"

// ResourceGroupOr returns rg, or DefaultResourceGroupID when rg is empty.
func ResourceGroupOr(rg string) string {
	if rg == "" {
		return DefaultResourceGroupID
	}
	return rg
}
