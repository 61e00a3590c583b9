"""Admission webhooks: MutatingAdmissionWebhook and ValidatingAdmissionWebhook call the HTTPS endpoints that
Mutating/ValidatingWebhookConfigurations name with an AdmissionReview for every write they match (upstream:
apiserver pkg/admission/plugin/webhook and pkg/admission/configuration).

configuration.py reads the configurations from the watch cache (the webhook accessors, in upstream's order);
generic.py decides which webhooks a request calls (rules, selectors, matchPolicy, matchConditions) and gives
each the object in the version it asked for; matchconditions.py evaluates the CEL match conditions;
request.py builds the AdmissionReview and checks the answer; client.py makes the HTTPS call; errors.py words
refusals and failures; mutating.py and validating.py are the two plugins.
"""
