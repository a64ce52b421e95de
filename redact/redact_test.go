package redact

import (
	"fmt"
	"strings"
	"testing"
)

func mustNew(t testing.TB, extra ...string) *Redactor {
	t.Helper()
	r, err := New(extra)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// Test secrets are assembled at run time so that this file itself trips no secret scanner.
func j(parts ...string) string { return strings.Join(parts, "") }

var (
	openaiKey    = j("sk-proj-", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab3dEf6hIj9kLm2nOp5q")
	openaiLegacy = j("sk-", "Zq8Wm3Rt6Yp9Uk2Ls5Dv8Fg1Hj4Kl7Nb0Mc3Xz6Va9Sd2")
	anthropicKey = j("sk-ant-", "api03-Xy9Wv8Ut7Sr6Qp5On4Ml3Kj2Ih1Gf0Ed-Cb9Az8Yx7Wv6Ut5Sr4Qp3AA")
	awsID        = j("AKIA", "Q3EGRTZ5XZ7TU6QW")
	awsSecret    = j("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYzEXAMPLEKEY1")
	ghToken      = j("ghp_", "aB3cD4eF5gH6iJ7kL8mN9oP0qR1sT2uV3wX4y")
	ghPAT        = j("github_pat_", "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGH")
	glToken      = j("glpat-", "xY1zA2bC3dE4fG5hI6jK")
	slackToken   = j("xoxb-", "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx")
	stripeKey    = j("sk_live_", "51Hx0aB2cD3eF4gH5iJ6kL7mN")
	stripeRK     = j("rk_live_", "51Hx0aB2cD3eF4gH5iJ6kL7mN")
	googleKey    = j("AIza", "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q")
	hfToken      = j("hf_", "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1w")
	mem0Key      = j("m0-", "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0")
	npmToken     = j("npm_", "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uV1wX2")
	jwt          = j("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", ".", "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ", ".", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
	pemBlock     = j("-----BEGIN RSA ", "PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n4lgOEePzNm0tRgeLezV6ffAt0gunVTLw\n-----END RSA ", "PRIVATE KEY-----")
)

func TestString(t *testing.T) {
	cases := []struct{ name, in, want string }{
		// provider keys
		{"openai project", "key " + openaiKey + " end", "key [REDACTED:openai-key] end"},
		{"openai legacy", "OPENAI=" + openaiLegacy, "OPENAI=[REDACTED:openai-key]"},
		{"anthropic", anthropicKey, "[REDACTED:anthropic-key]"},
		{"aws id", "id " + awsID + ".", "id [REDACTED:aws-access-key-id]."},
		{"aws asia", "ASIA" + awsID[4:], "[REDACTED:aws-access-key-id]"},
		{"aws secret env", "aws_secret_access_key=" + awsSecret, "aws_secret_access_key=[REDACTED]"},
		{"aws secret ini", "aws_secret_access_key = " + awsSecret, "aws_secret_access_key = [REDACTED]"},
		{"aws cli json", `"SecretAccessKey": "` + awsSecret + `"`, `"SecretAccessKey": "[REDACTED]"`},
		{"github classic", "token " + ghToken, "token [REDACTED:github-token]"},
		{"github pat", ghPAT, "[REDACTED:github-token]"},
		{"gitlab", glToken, "[REDACTED:gitlab-token]"},
		{"slack", slackToken, "[REDACTED:slack-token]"},
		{"stripe sk", stripeKey, "[REDACTED:stripe-key]"},
		{"stripe rk", stripeRK, "[REDACTED:stripe-key]"},
		{"google", "key=" + googleKey, "key=[REDACTED:google-api-key]"},
		{"huggingface", hfToken, "[REDACTED:huggingface-token]"},
		{"mem0", "MEM0_API_KEY=" + mem0Key, "MEM0_API_KEY=[REDACTED:mem0-key]"},
		{"npm", "//registry.npmjs.org/:_authToken=" + npmToken, "//registry.npmjs.org/:_authToken=[REDACTED:npm-token]"},
		{"jwt", "cookie: " + jwt + ";", "cookie: [REDACTED:jwt];"},
		// headers
		{"authorization bearer", "Authorization: Bearer abc.def-123", "Authorization: Bearer [REDACTED]"},
		{"authorization basic", `-H "Authorization: Basic dXNlcjpwYXNz"`, `-H "Authorization: Basic [REDACTED]"`},
		{"authorization json", `{"Authorization":"Bearer s3cr3tv4lue"}`, `{"Authorization":"Bearer [REDACTED]"}`},
		{"bare bearer", "Bearer 9f8e7d6c5b4a39281706", "Bearer [REDACTED]"},
		{"bearer jwt", "Bearer " + jwt, "Bearer [REDACTED:jwt]"},
		// PEM
		{"pem", "key:\n" + pemBlock + "\nafter", "key:\n[REDACTED:private-key]\nafter"},
		{"pem truncated", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n", "[REDACTED:private-key]"},
		// assignments
		{"env password", "DB_PASSWORD=hunter2", "DB_PASSWORD=[REDACTED]"},
		{"yaml passwd", "passwd: Tr0ub4dor&3x", "passwd: [REDACTED]&3x"},
		{"json password", `{"password":"correct horse"}`, `{"password":"[REDACTED]"}`},
		{"escaped json", `{\"password\":\"p4ss w0rd\"}`, `{\"password\":\"[REDACTED]\"}`},
		{"escaped twice", `{\\\"password\\\":\\\"p4ss w0rd\\\"}`, `{\\\"password\\\":\\\"[REDACTED]\\\"}`},
		{"quoted with %q", fmt.Sprintf("%q", `{\"api_key\":\"s5JeGlReoOSU2SdSjFPFjXzpoIl34Z\"}`), fmt.Sprintf("%q", `{\"api_key\":\"[REDACTED]\"}`)},
		{"single quoted", `secret = 'abc'`, `secret = '[REDACTED]'`},
		{"go short decl", `token := "tok_live_1"`, `token := "[REDACTED]"`},
		{"camel case", `clientSecret: "s3cr3t"`, `clientSecret: "[REDACTED]"`},
		{"api_key env", "OPENAI_API_KEY=abc123xyz", "OPENAI_API_KEY=[REDACTED]"},
		{"query string", "https://x.io/cb?access_token=abcdef&x=1", "https://x.io/cb?access_token=[REDACTED]&x=1"},
		{"cli flag equals", "--password=hunter2", "--password=[REDACTED]"},
		{"cli flag space", "mysql --password s3cretPass9 db", "mysql --password [REDACTED] db"},
		{"url credentials", "postgres://admin:s3cret@db:5432/x", "postgres://admin:[REDACTED]@db:5432/x"},
		{"private span", "a <private>my\nsecret</private> b", "a [REDACTED] b"},
		{"value with dots inside", `password="abc...def123"`, `password="[REDACTED]"`},
		{"private span upper", "<PRIVATE>x</PRIVATE>", "[REDACTED]"},
		{"two private spans", "<private>a</private> keep <private>b</private>", "[REDACTED] keep [REDACTED]"},
		// command lines and config files (the value's place makes it a secret)
		{"aws configure set", "aws configure set aws_secret_access_key " + awsSecret, "aws configure set aws_secret_access_key [REDACTED]"},
		{"aws configure set profile", "aws configure set --profile p aws_session_token 'tok3n'", "aws configure set --profile p aws_session_token '[REDACTED]'"},
		{"npm config set", "npm config set //registry.npmjs.org/:_authToken abcd1234efgh", "npm config set //registry.npmjs.org/:_authToken [REDACTED]"},
		{"gh with-token echo", "echo hunter22 | gh auth login --with-token", "echo [REDACTED] | gh auth login --with-token"},
		{"gh with-token herestring", "gh auth login --with-token <<< 'hunter22'", "gh auth login --with-token <<< '[REDACTED]'"},
		{"docker login -p", "docker login -u me -p hunter2 reg.io", "docker login -u me -p [REDACTED] reg.io"},
		{"docker password-stdin", "echo 'my pass' | docker login -u me --password-stdin", "echo '[REDACTED]' | docker login -u me --password-stdin"},
		{"curl -u", "curl -u admin:hunter2 https://x.io", "curl -u admin:[REDACTED] https://x.io"},
		{"curl --user=", "curl --user=admin:hunter2 https://x.io", "curl --user=admin:[REDACTED] https://x.io"},
		{"query key", "https://x.io/geo?q=a&key=Ab3dEf6hIj9k&z=1", "https://x.io/geo?q=a&key=[REDACTED]&z=1"},
		{"query signature", "https://b.s3.amazonaws.com/o?X-Amz-Signature=0123456789abcdef", "https://b.s3.amazonaws.com/o?X-Amz-Signature=[REDACTED]"},
		{"env line key", "APP_KEY=base64:Ab3dEf6hIj9kLm2nOp5q", "APP_KEY=[REDACTED]"},
		{"env line pass", "export DB_PASS=hunter2", "export DB_PASS=[REDACTED]"},
		{"netrc", "machine api.heroku.com\n  login me@x.io\n  password hunter2\n", "machine api.heroku.com\n  login me@x.io\n  password [REDACTED]\n"},
		{"netrc one line", "machine github.com login me password hunter2", "machine github.com login me password [REDACTED]"},
		{"heroku auth:token", "$ heroku auth:token\n01234567-89ab-cdef-0123-456789abcdef\n", "$ heroku auth:token\n[REDACTED]\n"},
		{"heroku key", "HRKU-" + "AAbcdEfgh1234567890_xyzAB", "[REDACTED:heroku-key]"},
		{"docker run uid", "docker run -u 1000:1000 img", ""},
		{"curl no password", "curl -u admin https://x.io", ""},
		{"curl env", `curl -u "$U:$P" https://x.io`, ""},
		{"sort key", "?sortKey=updatedAt", ""},
		{"netrc prose", "machine learning login page password reset flow", ""},
		{"env short key", "SORT_KEY=name", ""},
		// negatives: ordinary code and prose stay as they are
		{"plain", "func main() { fmt.Println(\"hi\") }", ""},
		{"max tokens", "max_tokens: 4096, maxTokens = 100", ""},
		{"tokenizer", "tokenizer = Tokenizer(model)", ""},
		{"token from call", "token := os.Getenv(\"GITHUB_TOKEN\")", ""},
		{"token var", "const token = req.headers.authorization;", ""},
		{"ts type", "password: string;", ""},
		{"ts optional", "token?: string", ""},
		{"attr access", "token: this.token,", ""},
		{"env var ref", "GITHUB_TOKEN=$GITHUB_TOKEN", ""},
		{"template", `"token": "${{ secrets.GITHUB_TOKEN }}"`, ""},
		{"placeholder", `api_key="<your key here>"`, ""},
		{"stars", "password=********", ""},
		{"prose value", `"token": "the token used to sign requests"`, ""},
		{"secret plural", "secrets.GITHUB_TOKEN", ""},
		{"secret path", "secret: /run/secrets/db", ""},
		{"task word", "task-skeleton-generator-component-name", ""},
		{"sk words", "sk-learn-compatible-estimators-are-great", ""},
		{"hf identifier", "hf_hub_download(repo_id)", ""},
		{"aws lowercase word", "fantasia and asia", ""},
		{"bearer prose", "the Bearer authentication scheme", ""},
		{"url no password", "https://github.com/user/repo@v1", ""},
		{"url port", "http://localhost:8080/x@y", ""},
		{"git ssh", "git@github.com:org/repo.git", ""},
		{"eyJ short", "eyJ is base64 for {\"", ""},
		{"private unclosed", "use <private> tags", ""},
		{"begin public key", "-----BEGIN PUBLIC KEY-----\nMIIB", ""},
		{"equality", `if token == "abc" {`, ""},
		{"empty value", `password=""`, ""},
		{"elided doc key", "export ANTHROPIC_API_KEY=sk-ant-...\nexport GROQ_API_KEY=gsk_…", ""},
		{"key name as value", `passwd: "SecretAccessKey": "` + awsSecret + `"`, `passwd: "SecretAccessKey": "[REDACTED]"`},
		{"redacted already", "password=[REDACTED] [REDACTED:openai-key]", ""},
	}
	r := mustNew(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.in
			}
			got := r.String(tc.in)
			if got != want {
				t.Fatalf("String(%q)\n got %q\nwant %q", tc.in, got, want)
			}
			if again := r.String(got); again != got {
				t.Fatalf("not idempotent: %q then %q", got, again)
			}
		})
	}
}

func TestExtra(t *testing.T) {
	cases := []struct {
		name    string
		extra   []string
		in      string
		want    string
		wantErr string
	}{
		{name: "whole match", extra: []string{`ACME-[0-9]{6}`}, in: "id ACME-123456 x", want: "id [REDACTED] x"},
		{name: "secret group", extra: []string{`pin=(?P<secret>\d+)`}, in: "pin=1234", want: "pin=[REDACTED]"},
		{name: "no literal prefix", extra: []string{`(?i)internal-[a-z]+`}, in: "see INTERNAL-host", want: "see [REDACTED]"},
		{name: "empty match ignored", extra: []string{`x*`}, in: "abc", want: "abc"},
		{name: "bad pattern", extra: []string{`ok`, `a(b`}, wantErr: `extra pattern 2 "a(b"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(tc.extra)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.String(tc.in); got != tc.want {
				t.Fatalf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestCleanTextNotCopied(t *testing.T) {
	r := mustNew(t)
	in := []byte("nothing to see here, just code: x := y + 1")
	if got := r.Bytes(in); &got[0] != &in[0] {
		t.Fatal("Bytes copied clean input")
	}
	if n := testing.AllocsPerRun(100, func() { r.String("plain text without triggers at all") }); n != 0 {
		t.Fatalf("clean String allocates %v times", n)
	}
}

// scan returns the set of rules whose trigger occurs in s. Only the tests use it (String
// calls scanHits): it reads the table on its own, without scanHits and without hitRow, so the
// tests that compare it with scanHits check scanHits and the numbering of the states.
func (p *prefilter) scan(s string) uint64 {
	var mask uint64
	row := uint16(0)
	for i := 0; i < len(s); i++ {
		row = p.next[int(row)+int(p.class[s[i]])]
		mask |= p.out[row>>p.shift]
	}
	return mask
}

// TestPrefilterTooLarge: triggers whose automaton does not fit the table's 16-bit rows make
// newPrefilter panic (at start-up, with the built-in rules) rather than wrap around.
func TestPrefilterTooLarge(t *testing.T) {
	var run []byte // 120 bytes no other trigger holds: a column each
	for c := range 120 {
		run = append(run, byte(0x80+c))
	}
	var lits []string
	for i := range 5 { // five literals sharing no prefix: 601 states of 128 columns
		lits = append(lits, string(run[i:])+string(run[:i]))
	}
	defer func() {
		if recover() == nil {
			t.Fatal("newPrefilter built a table too large for its rows")
		}
	}()
	newPrefilter([][]string{lits})
}

func TestPrefilter(t *testing.T) {
	p := newPrefilter([][]string{{"abc"}, {"bcd", "XY"}, {"c"}})
	cases := []struct {
		in   string
		want uint64
	}{
		{"", 0},
		{"zzz", 0},
		{"ABC", 1 | 4},
		{"abcd", 1 | 2 | 4},
		{"xy", 2},
		{"aabbc", 4},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			if got := p.scan(tc.in); got != tc.want {
				t.Fatalf("scan(%q) = %b, want %b", tc.in, got, tc.want)
			}
		})
	}
}

// TestRulesCompile compiles every built-in rule's regexp, which the rules otherwise compile on
// first use (lazyre): a bad one fails here, not on the first text that triggers it.
func TestRulesCompile(t *testing.T) {
	for _, ru := range builtinRules() {
		if ru.re == nil {
			if ru.mode != custom {
				t.Errorf("rule %q (mode %d) has no regexp", ru.name, ru.mode)
			}
			continue
		}
		if got := ru.re.Get().String(); got != ru.re.String() {
			t.Errorf("rule %q compiled %q from %q", ru.name, got, ru.re.String())
		}
	}
}
