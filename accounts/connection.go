package accounts

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

// The settings of a storage connection string (Azure Storage, "Configure
// a connection string"). Names are matched without regard to case, as
// the .NET parser does.
const (
	settingProtocol = "DefaultEndpointsProtocol"
	settingName     = "AccountName"
	settingKey      = "AccountKey"
	settingSAS      = "SharedAccessSignature"
	settingSuffix   = "EndpointSuffix"
	settingTable    = "TableEndpoint"
	settingQueue    = "QueueEndpoint"
	settingBlob     = "BlobEndpoint"
)

// defaultProtocol and defaultSuffix make a service's endpoint when the
// string names none: protocol://ACCOUNT.SERVICE.suffix/.
const (
	defaultProtocol = "https"
	defaultSuffix   = "core.windows.net"
)

// canonical is the setting named k, and whether a connection string may
// hold it: the settings above, and those of services tablekit makes no
// client of (accepted and not used). UseDevelopmentStorage and
// DevelopmentStorageProxyUri are not among them: the emulator's string
// names its endpoints and key instead.
func canonical(k string) (string, bool) {
	for _, name := range []string{
		settingProtocol, settingName, settingKey, settingSAS, settingSuffix, settingTable, settingQueue, settingBlob,
		"FileEndpoint", "TableSecondaryEndpoint", "QueueSecondaryEndpoint", "BlobSecondaryEndpoint", "FileSecondaryEndpoint",
	} {
		if strings.EqualFold(k, name) {
			return name, true
		}
	}
	return "", false
}

// Connection is a storage connection string, parsed once: the endpoint of
// each service and the credential its requests carry (the account's shared
// key, or a shared access signature). Its constructors send every request
// to the endpoint the string names, for each service alike.
//
// aztables.NewServiceClientFromConnectionString (v1.4.1) does not: given a
// SharedAccessSignature it ignores TableEndpoint, EndpointSuffix and
// DefaultEndpointsProtocol and sends the table requests, the signature
// attached, to https://ACCOUNT.table.core.windows.net, while the queue and
// blob clients honour their endpoints. Private endpoints, sovereign clouds
// and the emulator then break, and the signature goes to a host the user
// never named. Build clients from a connection string through Connection.
type Connection struct {
	name  string // AccountName; "" with a SAS that names every endpoint
	key   string // AccountKey; "" with a SAS
	sas   string // SharedAccessSignature without a leading "?"; "" with a key
	table string // each service's endpoint ending in "/"; "" when neither
	queue string // the string nor an AccountName gives it
	blob  string
}

// ParseConnectionString parses cs ("Name=value;Name=value;…"). It refuses
// (ErrBadConfig) a malformed part, an unknown or repeated setting,
// both or neither of AccountKey and SharedAccessSignature, an AccountKey
// without AccountName or not in base64, a SAS without a signature, and an
// endpoint that is not an http or https URL with a host and no query.
// A service whose endpoint the string neither names nor derives (a SAS
// string for blobs only, say) is refused by its constructor.
func ParseConnectionString(cs string) (*Connection, error) {
	set := map[string]string{}
	for i, part := range strings.Split(cs, ";") {
		if strings.TrimSpace(part) == "" {
			continue // "a=b;" and "a=b;;c=d" are common
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			// The part is not echoed: it may be a piece of a key.
			return nil, fmt.Errorf("%w: connection string: part %d is not Name=value", ErrBadConfig, i+1)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		name, ok := canonical(k)
		switch {
		case strings.EqualFold(k, "UseDevelopmentStorage") || strings.EqualFold(k, "DevelopmentStorageProxyUri"):
			return nil, fmt.Errorf("%w: connection string: %s is not supported: give the emulator's endpoints, AccountName and AccountKey", ErrBadConfig, k)
		case !ok && isSettingName(k):
			return nil, fmt.Errorf("%w: connection string: unknown setting %q", ErrBadConfig, k)
		case !ok:
			// Not echoed: it may be a piece of a key cut at an "=".
			return nil, fmt.Errorf("%w: connection string: part %d is not a setting", ErrBadConfig, i+1)
		case set[name] != "":
			return nil, fmt.Errorf("%w: connection string: %s is given twice", ErrBadConfig, name)
		case v == "":
			return nil, fmt.Errorf("%w: connection string: %s is empty", ErrBadConfig, name)
		}
		set[name] = v
	}
	c := &Connection{name: set[settingName], key: set[settingKey], sas: strings.TrimPrefix(set[settingSAS], "?")}
	switch {
	case c.key != "" && set[settingSAS] != "":
		return nil, fmt.Errorf("%w: connection string: both %s and %s: give one", ErrBadConfig, settingKey, settingSAS)
	case c.key == "" && set[settingSAS] == "":
		return nil, fmt.Errorf("%w: connection string: no %s or %s", ErrBadConfig, settingKey, settingSAS)
	case c.key != "" && c.name == "":
		return nil, fmt.Errorf("%w: connection string: %s without %s", ErrBadConfig, settingKey, settingName)
	}
	if c.key != "" {
		if _, err := base64.StdEncoding.DecodeString(c.key); err != nil {
			return nil, fmt.Errorf("%w: connection string: %s is not base64", ErrBadConfig, settingKey)
		}
	} else if q, err := url.ParseQuery(c.sas); err != nil || q.Get("sig") == "" {
		return nil, fmt.Errorf("%w: connection string: %s has no signature (sig)", ErrBadConfig, settingSAS)
	}
	protocol, suffix := defaultProtocol, defaultSuffix
	if p, ok := set[settingProtocol]; ok {
		if p = strings.ToLower(p); p != "http" && p != "https" {
			return nil, fmt.Errorf("%w: connection string: %s is neither http nor https", ErrBadConfig, settingProtocol)
		}
		protocol = p
	}
	if s, ok := set[settingSuffix]; ok {
		suffix = s
	}
	for _, e := range []struct {
		setting, service string
		to               *string
	}{{settingTable, "table", &c.table}, {settingQueue, "queue", &c.queue}, {settingBlob, "blob", &c.blob}} {
		ep, ok := set[e.setting]
		switch {
		case ok:
			u, err := url.Parse(ep)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
				return nil, fmt.Errorf("%w: connection string: %s is not an http or https URL with a host and no query", ErrBadConfig, e.setting)
			}
			*e.to = strings.TrimSuffix(ep, "/") + "/"
		case c.name != "":
			*e.to = protocol + "://" + c.name + "." + e.service + "." + suffix + "/"
		}
	}
	return c, nil
}

// isSettingName is whether k looks like a setting's name (letters only, as
// every setting's is), and so can be quoted in an error.
func isSettingName(k string) bool {
	const maxSettingName = 40 // longer than any setting's name
	if k == "" || len(k) > maxSettingName {
		return false
	}
	for _, r := range k {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}

// endpoint is the service URL of one service, or an error naming the
// setting that is missing.
func (c *Connection) endpoint(ep, setting string) (string, error) {
	switch {
	case ep == "":
		return "", fmt.Errorf("%w: connection string: no %s, and no %s to derive it from", ErrBadConfig, setting, settingName)
	case c.sas != "":
		return ep + "?" + c.sas, nil
	}
	return ep, nil
}

// TableService is the table service client of the string's TableEndpoint
// (or https://ACCOUNT.table.SUFFIX/), signed with the string's key or
// SAS, built with opts (nil: the SDK's defaults).
func (c *Connection) TableService(opts *aztables.ClientOptions) (*aztables.ServiceClient, error) {
	ep, err := c.endpoint(c.table, settingTable)
	if err != nil {
		return nil, err
	}
	if c.sas != "" {
		return aztables.NewServiceClientWithNoCredential(ep, opts)
	}
	cred, err := aztables.NewSharedKeyCredential(c.name, c.key)
	if err != nil {
		return nil, err
	}
	return aztables.NewServiceClientWithSharedKey(ep, cred, opts)
}

// QueueService is the queue service client of the string's QueueEndpoint
// (or https://ACCOUNT.queue.SUFFIX/), signed with the string's key or
// SAS, built with opts (nil: the SDK's defaults).
func (c *Connection) QueueService(opts *azqueue.ClientOptions) (*azqueue.ServiceClient, error) {
	ep, err := c.endpoint(c.queue, settingQueue)
	if err != nil {
		return nil, err
	}
	if c.sas != "" {
		return azqueue.NewServiceClientWithNoCredential(ep, opts)
	}
	cred, err := azqueue.NewSharedKeyCredential(c.name, c.key)
	if err != nil {
		return nil, err
	}
	return azqueue.NewServiceClientWithSharedKeyCredential(ep, cred, opts)
}

// BlobService is the blob service client of the string's BlobEndpoint (or
// https://ACCOUNT.blob.SUFFIX/), signed with the string's key or SAS,
// built with opts (nil: the SDK's defaults).
func (c *Connection) BlobService(opts *azblob.ClientOptions) (*azblob.Client, error) {
	ep, err := c.endpoint(c.blob, settingBlob)
	if err != nil {
		return nil, err
	}
	if c.sas != "" {
		return azblob.NewClientWithNoCredential(ep, opts)
	}
	cred, err := azblob.NewSharedKeyCredential(c.name, c.key)
	if err != nil {
		return nil, err
	}
	return azblob.NewClientWithSharedKeyCredential(ep, cred, opts)
}

// String names the endpoints and the kind of credential, never the key or
// the signature, so that printing a Connection leaks neither.
func (c *Connection) String() string {
	cred := "shared key"
	if c.sas != "" {
		cred = "SAS"
	}
	return fmt.Sprintf("table %s, queue %s, blob %s (%s)", orNone(c.table), orNone(c.queue), orNone(c.blob), cred)
}

// GoString is String, so that %#v leaks nothing either.
func (c *Connection) GoString() string { return c.String() }

func orNone(ep string) string {
	if ep == "" {
		return "none"
	}
	return ep
}
