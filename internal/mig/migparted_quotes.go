package mig

// Messages of NVIDIA mig-parted and go-nvlib that gpunode repeats word for
// word, so that a problem reads the same as in those tools. They are quotes:
// whose message each one is, and where it comes from, is said beside it.
// Everything else gpunode says about a mig-parted file is its own wording.

// mig-parted, api/spec/v1 spec.go (Spec and MigConfigSpec decoding).
const (
	quoteNoVersion          = "unable to parse with missing 'version' field"
	quoteBadVersion         = "unknown version: %v"
	quoteUnexpectedField    = "unexpected field: %v"
	quoteNeedsEntries       = "at least one entry in '%v' is required"
	quoteMissingField       = "missing required field: %v"
	quoteDevicesNotAll      = "invalid string input for '%v': %v"
	quoteEnabledWithoutList = "missing required field 'mig-devices' when 'mig-enabled' is true"
	quoteDisabledWithList   = "MIG devices included when 'mig-enabled' is false"
	quoteMigDevicesInvalid  = "error validating values in '%v' field: %v"
)

// mig-parted, pkg/types mig_config.go (MigConfig.AssertValid). The count
// message prints the count, not the profile, followed by a nil error
// ("invalid count for '-1': <nil>"); that is what mig-parted prints.
const (
	quoteProfileFormat = "invalid format for '%v': %v"
	quoteNegativeCount = "invalid count for '%v': %v"
	quoteAllCountsZero = "all counts for all MigProfiles are 0"
)

// mig-parted, pkg/types device.go (NewDeviceIDFromString, 2026).
const (
	quoteDeviceIDShape     = "invalid DeviceID format '%v': expected '<devicevendor>' or '<devicevendor>:<subdevicevendor>'"
	quoteDeviceIDNumber    = "unable to create DeviceID from string '%v': %v"
	quoteSubsystemIDNumber = "unable to create Subsystem from string '%v': %v"
)

// mig-parted, cmd/nvidia-mig-parted/assert GetSelectedMigConfig (also used
// by apply), for a -c label the file lacks.
const quoteLabelMissing = "selected mig-config not present: %v"

// go-nvlib v0.13.0, pkg/nvlib/device mig_profile.go: the MIG profile format
// check (AssertValidMigProfileFormat). The field texts contain a literal
// "%d": quoteFieldSpaces, quoteFieldUnit and quoteFieldNumber are formatted
// with the unit ("c", "g" or "gb") and print as "... '%dg'".
const (
	quoteProfileEmpty     = "profile is the empty string"
	quoteProfileBothSigns = "profile '%v' contains both '+/-' attributes"
	quoteProfileFields    = "cannot parse fields of '%v': %v"
	quoteProfileAttrs     = "cannot parse attributes of '%v': %v"
	quoteFieldSpaces      = "leading or trailing spaces on '%%d%[1]s'"
	quoteFieldUnit        = "missing '%[1]s' from '%%d%[1]s'"
	quoteFieldNumber      = "malformed number in '%%d%[1]s'"
	quoteFieldCount       = "parsed wrong number of fields, expected 2 or 3"
	quoteAttrRepeated     = "non unique attribute in list"
	quoteAttrEmpty        = "empty attribute in list"
	quoteAttrSpaces       = "leading or trailing spaces in attribute"
	quoteAttrDigitFirst   = "attribute begins with a number"
	quoteAttrDotEdge      = "attribute begins/ends with a dot"
	quoteAttrCharset      = "non alpha-numeric character or digit in attribute"
)

// mig-parted, cmd/nvidia-mig-parted (the prefix of every refusal of a
// config file it reads).
const quoteParseConfigFile = "error parsing config file"
