package terraform_test

import (
	"slices"
	"strings"
	"testing"
)

// stmt builds a statement; cond is "Operator key=v1,v2" clauses.
func stmt(effect string, actions, resources []string, cond ...string) iamStatement {
	st := iamStatement{Effect: effect, Action: actions, Resource: resources}
	for _, c := range cond {
		op, kv, _ := strings.Cut(c, " ")
		k, v, _ := strings.Cut(kv, "=")
		if st.Condition == nil {
			st.Condition = map[string]map[string]strList{}
		}
		if st.Condition[op] == nil {
			st.Condition[op] = map[string]strList{}
		}
		st.Condition[op][k] = strings.Split(v, ",")
	}
	return st
}

func policyOf(sts ...iamStatement) []iamPolicy {
	return []iamPolicy{{Version: "2012-10-17", Statement: sts}}
}

// ctx builds a request context from "key=v1,v2" entries ("key=" is a key
// present with no value).
func ctx(entries ...string) map[string][]string {
	m := map[string][]string{}
	for _, e := range entries {
		k, v, _ := strings.Cut(e, "=")
		if v == "" {
			m[k] = nil
			continue
		}
		m[k] = strings.Split(v, ",")
	}
	return m
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		fold, want bool
	}{
		{"*", "anything:at/all", false, true},
		{"secretsmanager:Get*", "secretsmanager:GetSecretValue", false, true},
		{"secretsmanager:get*", "SecretsManager:GetSecretValue", true, true},
		{"secretsmanager:get*", "SecretsManager:GetSecretValue", false, false},
		{"arn:aws:secretsmanager:us-east-1:1:secret:certfn/*", "arn:aws:secretsmanager:us-east-1:1:secret:certfn/ns/name-AbCdEf", false, true},
		{"arn:aws:secretsmanager:us-east-1:1:secret:certfn/*", "arn:aws:secretsmanager:us-east-1:1:secret:certfnx/ns/name", false, false},
		{"arn:aws:logs:r:1:log-group:/aws/lambda/f:*", "arn:aws:logs:r:1:log-group:/aws/lambda/f:log-stream:x", false, true},
		{"arn:aws:logs:r:1:log-group:/aws/lambda/f:*", "arn:aws:logs:r:1:log-group:/aws/lambda/fg:log-stream:x", false, false},
		{"a?c", "abc", false, true},
		{"a?c", "ac", false, false},
		{"a*b*c", "axxbyyc", false, true},
		{"a*b*c", "axxcyyb", false, false},
		{"_acme-challenge.*", "_acme-challenge.www.example.com", false, true},
		{"_acme-challenge.*", "www.example.com", false, false},
		{"exact", "exact", false, true},
		{"exact", "exactly", false, false},
	}
	for _, c := range cases {
		if got := globMatch(c.pattern, c.s, c.fold); got != c.want {
			t.Errorf("globMatch(%q, %q, fold=%v) = %v, want %v", c.pattern, c.s, c.fold, got, c.want)
		}
	}
}

func TestEvaluate(t *testing.T) {
	const sec = "arn:aws:secretsmanager:us-east-1:1:secret:p/ns/n"
	tag := "secretsmanager:ResourceTag/certfn-role"
	cases := []struct {
		name     string
		policies []iamPolicy
		req      iamRequest
		want     decision
	}{
		{"no statement", policyOf(), iamRequest{"s3:GetObject", "arn:aws:s3:::b/k", nil}, implicitDeny},
		{"plain allow", policyOf(stmt("Allow", []string{"sqs:SendMessage"}, []string{"arn:q"})), iamRequest{"sqs:SendMessage", "arn:q", nil}, allowed},
		{"action case-insensitive", policyOf(stmt("Allow", []string{"SQS:sendmessage"}, []string{"arn:q"})), iamRequest{"sqs:SendMessage", "arn:q", nil}, allowed},
		{"other resource", policyOf(stmt("Allow", []string{"sqs:SendMessage"}, []string{"arn:q"})), iamRequest{"sqs:SendMessage", "arn:q2", nil}, implicitDeny},
		{"explicit deny wins", policyOf(
			stmt("Allow", []string{"*"}, []string{"*"}),
			stmt("Deny", []string{"secretsmanager:GetSecretValue"}, []string{"*"}),
		), iamRequest{"secretsmanager:GetSecretValue", sec, nil}, explicitDeny},
		{"NotAction allow", []iamPolicy{{Statement: []iamStatement{{Effect: "Allow", NotAction: strList{"iam:*"}, Resource: strList{"*"}}}}},
			iamRequest{"secretsmanager:GetSecretValue", sec, nil}, allowed},
		{"NotResource allow", []iamPolicy{{Statement: []iamStatement{{Effect: "Allow", Action: strList{"s3:*"}, NotResource: strList{"arn:aws:s3:::private/*"}}}}},
			iamRequest{"s3:GetObject", "arn:aws:s3:::public/k", nil}, allowed},
		{"StringEquals tag matches", policyOf(stmt("Allow", []string{"secretsmanager:GetSecretValue"}, []string{sec}, "StringEquals "+tag+"=certificate,private-key")),
			iamRequest{"secretsmanager:GetSecretValue", sec, ctx(tag + "=private-key")}, allowed},
		{"StringEquals tag differs", policyOf(stmt("Allow", []string{"secretsmanager:GetSecretValue"}, []string{sec}, "StringEquals "+tag+"=certificate")),
			iamRequest{"secretsmanager:GetSecretValue", sec, ctx(tag + "=ca")}, implicitDeny},
		{"StringEquals key absent", policyOf(stmt("Allow", []string{"secretsmanager:GetSecretValue"}, []string{sec}, "StringEquals "+tag+"=certificate")),
			iamRequest{"secretsmanager:GetSecretValue", sec, nil}, implicitDeny},
		{"condition key case-insensitive", policyOf(stmt("Allow", []string{"secretsmanager:GetSecretValue"}, []string{sec}, "StringEquals SecretsManager:resourcetag/certfn-role=certificate")),
			iamRequest{"secretsmanager:GetSecretValue", sec, ctx(tag + "=certificate")}, allowed},
		{"StringNotEquals key absent matches", policyOf(stmt("Allow", []string{"secretsmanager:GetSecretValue"}, []string{sec}, "StringNotEquals "+tag+"=ca")),
			iamRequest{"secretsmanager:GetSecretValue", sec, nil}, allowed},
		{"StringNotEquals value equal", policyOf(stmt("Allow", []string{"secretsmanager:GetSecretValue"}, []string{sec}, "StringNotEquals "+tag+"=ca")),
			iamRequest{"secretsmanager:GetSecretValue", sec, ctx(tag + "=ca")}, implicitDeny},
		{"IfExists key absent", policyOf(stmt("Allow", []string{"secretsmanager:TagResource"}, []string{sec}, "StringEqualsIfExists "+tag+"=certificate")),
			iamRequest{"secretsmanager:TagResource", sec, nil}, allowed},
		{"IfExists key present and different", policyOf(stmt("Allow", []string{"secretsmanager:TagResource"}, []string{sec}, "StringEqualsIfExists "+tag+"=certificate")),
			iamRequest{"secretsmanager:TagResource", sec, ctx(tag + "=ca")}, implicitDeny},
		{"ForAllValues all in set", policyOf(stmt("Allow", []string{"route53:ChangeResourceRecordSets"}, []string{"*"}, "ForAllValues:StringEquals route53:ChangeResourceRecordSetsRecordTypes=TXT")),
			iamRequest{"route53:ChangeResourceRecordSets", "z", ctx("route53:ChangeResourceRecordSetsRecordTypes=TXT,TXT")}, allowed},
		{"ForAllValues one outside", policyOf(stmt("Allow", []string{"route53:ChangeResourceRecordSets"}, []string{"*"}, "ForAllValues:StringEquals route53:ChangeResourceRecordSetsRecordTypes=TXT")),
			iamRequest{"route53:ChangeResourceRecordSets", "z", ctx("route53:ChangeResourceRecordSetsRecordTypes=TXT,A")}, implicitDeny},
		{"ForAllValues absent is vacuous", policyOf(stmt("Allow", []string{"dynamodb:GetItem"}, []string{"*"}, "ForAllValues:StringLike dynamodb:LeadingKeys=Challenge/*")),
			iamRequest{"dynamodb:GetItem", "t", nil}, allowed},
		{"ForAllValues StringLike", policyOf(stmt("Allow", []string{"dynamodb:GetItem"}, []string{"*"}, "ForAllValues:StringLike dynamodb:LeadingKeys=Challenge/*")),
			iamRequest{"dynamodb:GetItem", "t", ctx("dynamodb:LeadingKeys=Certificate/ns/web")}, implicitDeny},
		{"ForAnyValue one in set", policyOf(stmt("Allow", []string{"kms:Decrypt"}, []string{"*"}, "ForAnyValue:StringEquals kms:ResourceAliases=alias/certfn")),
			iamRequest{"kms:Decrypt", "k", ctx("kms:ResourceAliases=alias/x,alias/certfn")}, allowed},
		{"ForAnyValue absent", policyOf(stmt("Allow", []string{"kms:Decrypt"}, []string{"*"}, "ForAnyValue:StringEquals kms:ResourceAliases=alias/certfn")),
			iamRequest{"kms:Decrypt", "k", nil}, implicitDeny},
		{"Null true", policyOf(stmt("Allow", []string{"kms:Decrypt"}, []string{"*"}, "Null kms:ViaService=true")),
			iamRequest{"kms:Decrypt", "k", nil}, allowed},
		{"Null false", policyOf(stmt("Allow", []string{"kms:Decrypt"}, []string{"*"}, "Null kms:ViaService=false")),
			iamRequest{"kms:Decrypt", "k", nil}, implicitDeny},
		{"all conditions must hold", policyOf(stmt("Allow", []string{"kms:Decrypt"}, []string{"*"},
			"StringEquals kms:ViaService=sqs.us-east-1.amazonaws.com", "ForAnyValue:StringEquals kms:ResourceAliases=alias/certfn")),
			iamRequest{"kms:Decrypt", "k", ctx("kms:ViaService=sqs.us-east-1.amazonaws.com")}, implicitDeny},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := evaluate(c.policies, c.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("evaluate = %v, want %v", got, c.want)
			}
		})
	}
}

func TestEvaluateRejectsUnknownOperators(t *testing.T) {
	cases := []iamStatement{
		stmt("Allow", []string{"kms:Decrypt"}, []string{"*"}, "NumericLessThan aws:MultiFactorAuthAge=3600"),
		stmt("Allow", []string{"kms:Decrypt"}, []string{"*"}, "ForEveryValue:StringEquals k=v"),
		stmt("Allow", []string{"kms:Decrypt"}, []string{"*"}, "Null k=maybe"),
		{Effect: "Allow", Resource: strList{"*"}},                                  // no action
		{Effect: "Allow", Action: strList{"kms:Decrypt"}},                          // no resource
		{Effect: "Permit", Action: strList{"kms:Decrypt"}, Resource: strList{"*"}}, // bad effect
	}
	for i, st := range cases {
		if _, _, err := evaluate(policyOf(st), iamRequest{"kms:Decrypt", "k", nil}); err == nil {
			t.Errorf("case %d: evaluate accepted %+v", i, st)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	p, err := parsePolicy(`{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"arn:q"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Statement) != 1 || !slices.Equal(p.Statement[0].Action, []string{"sqs:SendMessage"}) || !slices.Equal(p.Statement[0].Resource, []string{"arn:q"}) {
		t.Fatalf("parsed %+v", p)
	}
	if _, err := parsePolicy(`{"Statement":[{"Action":42}]}`); err == nil {
		t.Error("parsePolicy accepted a numeric Action")
	}
}

func TestWildcardAllows(t *testing.T) {
	listOnly := map[string]bool{"route53:listhostedzonesbyname": true}
	cases := []struct {
		name string
		st   iamStatement
		want int
	}{
		{"scoped", stmt("Allow", []string{"sqs:SendMessage"}, []string{"arn:q"}), 0},
		{"list-only on *", stmt("Allow", []string{"route53:ListHostedZonesByName"}, []string{"*"}), 0},
		{"deny on * is fine", stmt("Deny", []string{"secretsmanager:GetSecretValue"}, []string{"*"}), 0},
		{"star action", stmt("Allow", []string{"*"}, []string{"arn:q"}), 1},
		{"service star", stmt("Allow", []string{"sqs:*"}, []string{"arn:q"}), 1},
		{"prefix wildcard", stmt("Allow", []string{"secretsmanager:Get*"}, []string{"arn:q"}), 1},
		{"star on star", stmt("Allow", []string{"*"}, []string{"*"}), 2},
		{"real action on *", stmt("Allow", []string{"secretsmanager:GetSecretValue"}, []string{"*"}), 1},
		{"NotAction", iamStatement{Effect: "Allow", NotAction: strList{"iam:*"}, Resource: strList{"arn:q"}}, 1},
	}
	for _, c := range cases {
		if got := wildcardAllows(policyOf(c.st), listOnly); len(got) != c.want {
			t.Errorf("%s: wildcardAllows = %q, want %d findings", c.name, got, c.want)
		}
	}
}
