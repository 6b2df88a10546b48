//! GuardCode: short behavioural reminders injected when a prompt asks for
//! a complex change, a quick fix, or a choice. Keywords in English, French and Spanish; each rule
//! is switched on or off in `config.json` (`guardcode`).

use ai_smartness_config::GuardCode;
use regex::Regex;
use std::sync::LazyLock;

static COMPLEX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(implement|refactor|create|build|add\s+(?:a|the)\s+feature|new\s+system|architecture|migrat(?:e|ion)|integrat(?:e|ion)|optimi[sz]e|rewrite|redesign|impl[ée]menter|refactor(?:er|iser)|cr[ée]er|construire|ajouter\s+une\s+fonctionnalit[ée]|nouveau\s+syst[èe]me|int[ée]gration|optimiser|r[ée][ée]crire|implementar|refactorizar|crear|construir|a[ñn]adir\s+una\s+funcionalidad|nuevo\s+sistema|arquitectura|migraci[óo]n|integraci[óo]n|optimizar|reescribir)\b",
    )
    .expect("valid regex")
});

static QUICK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(quick(?:ly)?|hack|just|simply|workaround|temporary\s+fix|rapide(?:ment)?|vite|juste|simplement|bidouille|contournement|r[áa]pid[oa]|r[áa]pidamente|solo|simplemente|parche|chapuza)\b",
    )
    .expect("valid regex")
});

static CHOICE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(\bshould\s+(?:i|we)\b|\bwhich\s+(?:one|is\s+better|approach|option|library)\b|\boptions?\b|\balternatives?\b|\bvs\.?\b|\bversus\b|\bor\s+should\b|\blequel\b|\blaquelle\b|\bchoisir\b|\bfaut-il\b|\bcu[áa]l\b|\belegir\b|\bopci(?:ón|on|ones)\b|\bdeber[íi]a(?:mos)?\b)",
    )
    .expect("valid regex")
});

/// The reminders that apply to `prompt`, by language.
pub fn reminders(prompt: &str, rules: &GuardCode, language: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    let (plan, quick, choices) = match language {
        "fr" => (
            "Changement complexe : envisage le mode plan et décris l'approche avant de modifier le code.",
            "Solution rapide demandée : évalue les alternatives et leurs risques avant de choisir.",
            "Un choix est demandé : présente toutes les options avec leurs compromis.",
        ),
        "es" => (
            "Cambio complejo: considera el modo plan y describe el enfoque antes de tocar el código.",
            "Se pide una solución rápida: evalúa las alternativas y sus riesgos antes de elegir.",
            "Se pide una elección: presenta todas las opciones con sus ventajas e inconvenientes.",
        ),
        _ => (
            "Complex change: consider plan mode and outline the approach before editing code.",
            "A quick fix is asked for: weigh the alternatives and their risks before settling.",
            "A choice is asked for: present all the options with their trade-offs.",
        ),
    };
    if rules.enforce_plan_mode && COMPLEX.is_match(prompt) {
        out.push(plan);
    }
    if rules.warn_quick_solutions && QUICK.is_match(prompt) {
        out.push(quick);
    }
    if rules.require_all_choices && CHOICE.is_match(prompt) {
        out.push(choices);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_in_three_languages_and_switches() {
        let on = GuardCode::default();
        assert_eq!(
            reminders("Implement a retry layer for the HTTP client", &on, "en").len(),
            1
        );
        assert_eq!(
            reminders("Peux-tu refactoriser le module de stockage ?", &on, "fr").len(),
            1
        );
        assert_eq!(
            reminders("Necesito un parche rápido para el login", &on, "es").len(),
            1
        );
        assert_eq!(
            reminders("Should I use tokio or async-std?", &on, "en").len(),
            1
        );
        assert!(reminders("What does this function return?", &on, "en").is_empty());
        let off = GuardCode {
            enforce_plan_mode: false,
            ..GuardCode::default()
        };
        assert!(reminders("Implement a retry layer", &off, "en").is_empty());
        assert!(reminders("Implement a retry layer", &on, "fr")[0].starts_with("Changement"));
    }
}
