package tune

import _ "go.yaml.in/yaml/v3"
