/*
 * tls_settings.c - Kafka's ssl.* settings of one listener, as the TLS
 * layer takes them (tls_settings.h).
 */
#include "broker/tls_settings.h"

#include "broker/config.h"
#include "sec/tls.h"

void tls_settings_of(const struct broker_cfg *cfg, const char *n, struct tls_cfg *out)
{
	static const char *const auth[] = { "none", "requested", "required" };
	int a = cfg->ssl_client_auth >= 0 && cfg->ssl_client_auth < 3 ? cfg->ssl_client_auth : 0;
	struct tls_cfg tc = {
		.keystore_type = config_listener_ssl(cfg, n, "ssl.keystore.type", cfg->ssl_keystore_type),
		.keystore_location = config_listener_ssl(cfg, n, "ssl.keystore.location", cfg->ssl_keystore_location),
		.key_password = config_listener_ssl(cfg, n, "ssl.key.password", cfg->ssl_key_password),
		.keystore_password = config_listener_ssl(cfg, n, "ssl.keystore.password", cfg->ssl_keystore_password),
		.keystore_certificate_chain = config_listener_ssl(cfg, n, "ssl.keystore.certificate.chain",
								  cfg->ssl_keystore_certificate_chain),
		.keystore_key = config_listener_ssl(cfg, n, "ssl.keystore.key", cfg->ssl_keystore_key),
		.truststore_type = config_listener_ssl(cfg, n, "ssl.truststore.type", cfg->ssl_truststore_type),
		.truststore_location =
			config_listener_ssl(cfg, n, "ssl.truststore.location", cfg->ssl_truststore_location),
		.truststore_certificates =
			config_listener_ssl(cfg, n, "ssl.truststore.certificates", cfg->ssl_truststore_certificates),
		.client_auth = config_listener_ssl(cfg, n, "ssl.client.auth", auth[a]),
		.enabled_protocols = config_listener_ssl(cfg, n, "ssl.enabled.protocols", cfg->ssl_enabled_protocols),
		.cipher_suites = config_listener_ssl(cfg, n, "ssl.cipher.suites", cfg->ssl_cipher_suites),
		.truststore_password =
			config_listener_ssl(cfg, n, "ssl.truststore.password", cfg->ssl_truststore_password),
		.principal_mapping_rules =
			config_listener_ssl(cfg, n, "ssl.principal.mapping.rules", cfg->ssl_principal_mapping_rules),
	};

	*out = tc;
}
