//! The chat models of one sweep: every (chat profile, temperature) of the grid names a model,
//! and models with the same identity share one slot, so equal requests to them are one call.
//!
//! A model's identity is what its cache key covers: its name and parameters
//! ([`ChatModel::model`], [`ChatModel::params`]); a profile on other servers than `chat:`'s adds
//! them to its parameters (see `settings.rs`). A request names its slot in
//! [`ChatRequest::slot`]; [`ChatSlots`] itself is a [`ChatModel`] that sends each request to its
//! slot's model, so the runner, the cache check and the progress bar see one model.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{bail, Result};

use crate::adapters::chat::{CallError, ChatModel, ChatReply, ChatRequest};
use crate::base::BoxFuture;
use crate::vocab::grid::{Decimal, Setting, DEFAULT_PROFILE};

/// A chat model a setting can name.
#[derive(Clone)]
pub struct ChatVariant {
    /// A key of `models:`, or `default` for the `chat:` section.
    pub profile: String,
    /// The temperature the model sends; `None`: the profile's own.
    pub temperature: Option<Decimal>,
    pub model: Arc<dyn ChatModel>,
}

/// The distinct chat models of a sweep, slot 0 being the configured `chat:` model.
pub struct ChatSlots {
    models: Vec<Arc<dyn ChatModel>>,
    /// The profile name of each slot's first variant (for dry-run rows).
    names: Vec<String>,
    of: HashMap<(String, Option<Decimal>), u32>,
}

/// What decides a reply besides the request: equal identities share a slot.
fn identity(model: &dyn ChatModel) -> (String, String) {
    (model.model(), model.params().to_string())
}

impl ChatSlots {
    /// Slot 0 is `default`, then one slot per variant whose identity is new.
    pub fn new(default: Arc<dyn ChatModel>, variants: &[ChatVariant]) -> Self {
        let mut slots = ChatSlots {
            names: vec![DEFAULT_PROFILE.to_string()],
            of: HashMap::from([((DEFAULT_PROFILE.to_string(), None), 0)]),
            models: vec![default],
        };
        let mut by_identity: HashMap<(String, String), u32> =
            HashMap::from([(identity(slots.models[0].as_ref()), 0)]);
        for v in variants {
            let slot = *by_identity
                .entry(identity(v.model.as_ref()))
                .or_insert_with(|| {
                    slots.models.push(v.model.clone());
                    slots.names.push(v.profile.clone());
                    (slots.models.len() - 1) as u32
                });
            slots.of.insert((v.profile.clone(), v.temperature), slot);
        }
        slots
    }

    /// The slot that answers each setting.
    pub fn of_settings(&self, settings: &[Setting]) -> Result<Vec<u32>> {
        settings
            .iter()
            .map(|s| match self.of.get(&(s.chat.clone(), s.temperature)) {
                Some(&slot) => Ok(slot),
                None => bail!(
                    "no chat model for profile `{}` at temperature {:?}",
                    s.chat,
                    s.temperature.map(|t| t.to_string())
                ),
            })
            .collect()
    }

    /// The model of slot `slot`.
    pub fn model(&self, slot: u32) -> &Arc<dyn ChatModel> {
        &self.models[slot as usize]
    }

    /// Per slot, whether its model takes the question and passages ([`ChatModel::takes_passages`])
    /// rather than a prompt.
    pub fn take_passages(&self) -> Vec<bool> {
        self.models.iter().map(|m| m.takes_passages()).collect()
    }

    /// How many distinct models there are.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }
}

impl ChatModel for ChatSlots {
    fn model(&self) -> String {
        self.models[0].model()
    }

    fn params(&self) -> serde_json::Value {
        self.models[0].params()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatReply, CallError>> {
        self.model(request.slot).complete(request)
    }

    fn is_cached(&self, request: &ChatRequest) -> bool {
        self.model(request.slot).is_cached(request)
    }

    fn takes_passages(&self) -> bool {
        self.models[0].takes_passages()
    }

    fn warnings(&self) -> Vec<String> {
        self.models.iter().flat_map(|m| m.warnings()).collect()
    }

    fn prefix_cached(&self) -> bool {
        self.models.iter().any(|m| m.prefix_cached())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::mock::MockModel;

    /// A mock under another name and temperature, as a profile would be.
    struct Named(&'static str, f64, MockModel);

    impl ChatModel for Named {
        fn model(&self) -> String {
            self.0.to_string()
        }
        fn params(&self) -> serde_json::Value {
            serde_json::json!({ "temperature": self.1 })
        }
        fn complete<'a>(
            &'a self,
            request: &'a ChatRequest,
        ) -> BoxFuture<'a, Result<ChatReply, CallError>> {
            self.2.complete(request)
        }
    }

    fn named(name: &'static str, t: f64) -> Named {
        Named(name, t, MockModel::default())
    }

    fn variant(profile: &str, t: Option<&str>, model: Arc<dyn ChatModel>) -> ChatVariant {
        ChatVariant {
            profile: profile.into(),
            temperature: t.map(|t| t.parse().unwrap()),
            model,
        }
    }

    #[test]
    fn equal_identities_share_a_slot_and_others_get_their_own() {
        let slots = ChatSlots::new(
            Arc::new(named("a", 0.0)),
            &[
                // `default` at its own temperature: the configured model.
                variant("default", Some("0"), Arc::new(named("a", 0.0))),
                variant("default", Some("0.7"), Arc::new(named("a", 0.7))),
                // Another name for the same model and parameters.
                variant("alias", None, Arc::new(named("a", 0.0))),
                variant("b", None, Arc::new(named("b", 0.0))),
            ],
        );
        assert_eq!(slots.len(), 3);
        let setting = |chat: &str, t: Option<&str>| Setting {
            chat: chat.into(),
            temperature: t.map(|t| t.parse().unwrap()),
            ..Setting::new("0.1".parse().unwrap(), 1)
        };
        let settings = [
            setting("default", None),
            setting("default", Some("0")),
            setting("default", Some("0.7")),
            setting("alias", None),
            setting("b", None),
        ];
        assert_eq!(slots.of_settings(&settings).unwrap(), [0, 0, 1, 0, 2]);
        assert_eq!(
            slots
                .of_settings(&[setting("c", None)])
                .unwrap_err()
                .to_string(),
            "no chat model for profile `c` at temperature None"
        );
    }
}
